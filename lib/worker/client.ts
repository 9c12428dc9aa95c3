/**
 * Main-thread side of the worker transport: `createWorkerPolicy(url)` runs a policy in a Web
 * Worker (where `exposePolicy` answers) and returns the same `Policy` interface, so a page stays
 * responsive while a model runs. Results come back in transferred buffers, an AbortSignal is
 * forwarded to the worker, token events and load progress are relayed, and errors are re-thrown
 * as the same typed errors the worker's policy threw.
 */
import { AbortError, WebgrpoError } from '../errors.js';
import type { Policy } from '../core/policy.js';
import {
  packRows,
  buffersOf,
  reviveError,
  unpackGroup,
  unpackScore,
  type FromWorker,
  type InitResult,
  type PackedGroup,
  type PackedScore,
  type ToWorker,
} from './protocol.js';

export interface WorkerPolicyOptions {
  /** Passed to the worker's policy factory (for example `{ model: '/models/webgrpo-tiny' }`). */
  init?: unknown;
  /** Load progress the worker's factory reports. */
  onProgress?: (progress: unknown) => void;
  /** Cancels loading. */
  signal?: AbortSignal;
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  onEvent?: (message: FromWorker) => void;
}

/** A request without its id (the id is assigned when it is sent). */
type Outgoing = ToWorker extends infer T ? (T extends unknown ? Omit<T, 'id'> : never) : never;

/** `source`: a module worker URL (started with `{ type: 'module' }`) or a Worker you made. */
export async function createWorkerPolicy(source: string | URL | Worker, options: WorkerPolicyOptions = {}): Promise<Policy> {
  const worker = typeof source === 'string' || source instanceof URL ? new Worker(source, { type: 'module' }) : source;
  const channel = new WorkerChannel(worker);
  let init: InitResult;
  try {
    init = await channel.call<InitResult>(
      { type: 'init', init: options.init },
      {
        ...(options.signal ? { signal: options.signal } : {}),
        onEvent: (m) => {
          if (m.type === 'progress') options.onProgress?.(m.progress);
        },
      },
    );
  } catch (error) {
    worker.terminate();
    throw error;
  }
  return workerPolicy(channel, init);
}

interface CallOptions {
  transfer?: Transferable[];
  signal?: AbortSignal;
  onEvent?: (m: FromWorker) => void;
}

/** Requests to the worker by id, their answers and events routed back; once the worker fails, every call is refused with its error. */
class WorkerChannel {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private dead: Error | null = null;

  constructor(readonly worker: Worker) {
    worker.addEventListener('message', (event: MessageEvent<FromWorker>) => this.receive(event.data));
    worker.addEventListener('error', (event: ErrorEvent) => {
      event.preventDefault();
      this.fail(new WebgrpoError('Generation', `The policy worker failed: ${event.message || 'an uncaught error (see the worker console)'}.`));
    });
    worker.addEventListener('messageerror', () => this.fail(new WebgrpoError('Generation', 'A message from the policy worker could not be read.')));
  }

  get closed(): boolean {
    return this.dead !== null;
  }

  /** Rejects every pending call and every later one with `error`. */
  fail(error: Error): void {
    this.dead = error;
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }

  call<T>(message: Outgoing, extra: CallOptions = {}): Promise<T> {
    if (this.dead) return Promise.reject(this.dead);
    const { signal } = extra;
    if (signal?.aborted) return Promise.reject(new AbortError(undefined, { cause: signal.reason }));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => this.worker.postMessage({ id: this.nextId++, type: 'abort', target: id } satisfies ToWorker);
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = () => signal?.removeEventListener('abort', onAbort);
      this.pending.set(id, {
        resolve: (value) => {
          done();
          resolve(value as T);
        },
        reject: (error) => {
          done();
          reject(error);
        },
        ...(extra.onEvent ? { onEvent: extra.onEvent } : {}),
      });
      this.worker.postMessage({ ...message, id } as ToWorker, extra.transfer ?? []);
    });
  }

  private receive(message: FromWorker): void {
    const call = this.pending.get(message.id);
    if (!call) return;
    if (message.type === 'result') {
      this.pending.delete(message.id);
      call.resolve(message.value);
    } else if (message.type === 'error') {
      this.pending.delete(message.id);
      call.reject(reviveError(message.error));
    } else {
      call.onEvent?.(message);
    }
  }
}

/** The policy the worker's answers make: generateGroup and dispose always, the rest where the worker's policy has them. */
function workerPolicy(channel: WorkerChannel, init: InitResult): Policy {
  const call = <T>(message: Outgoing, extra?: CallOptions) => channel.call<T>(message, extra);
  const policy: Policy = {
    info: { ...init.info, note: [`in a Web Worker (${init.info.backend})`, init.info.note].filter(Boolean).join('; ') },
    async generateGroup(o) {
      const { signal, onToken, ...rest } = o;
      const packed = await call<PackedGroup>(
        { type: 'generateGroup', options: { ...rest, streamTokens: !!onToken } },
        {
          ...(signal ? { signal } : {}),
          ...(onToken ? { onEvent: (m) => m.type === 'token' && onToken(m.event) } : {}),
        },
      );
      return unpackGroup(packed);
    },
    async dispose() {
      if (channel.closed) return;
      try {
        await call({ type: 'dispose' });
      } finally {
        channel.worker.terminate();
        channel.fail(new WebgrpoError('Generation', 'This worker policy was disposed; create a new one.'));
      }
    },
  };
  if (init.can.scoreCompletions) {
    policy.scoreCompletions = async (o) => {
      const { signal, completions, ...rest } = o;
      const packed = packRows(completions, Int32Array);
      const score = await call<PackedScore>(
        { type: 'scoreCompletions', options: { ...rest, completions: packed } },
        { transfer: buffersOf(packed), ...(signal ? { signal } : {}) },
      );
      return unpackScore(score);
    };
  }
  if (init.can.encode) policy.encode = async (text) => Array.from(await call<Int32Array>({ type: 'encode', text }));
  if (init.can.decode) {
    policy.decode = (tokenIds, decodeOptions) => call<string>({ type: 'decode', tokenIds, ...(decodeOptions ? { options: decodeOptions } : {}) });
  }
  if (init.can.renderPrompt) policy.renderPrompt = (input) => call<string>({ type: 'renderPrompt', input: { ...(input.prompt !== undefined ? { prompt: input.prompt } : {}), ...(input.messages !== undefined ? { messages: input.messages } : {}) } });
  return policy;
}
