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
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let dead: Error | null = null;

  const fail = (error: Error) => {
    dead = error;
    for (const p of pending.values()) p.reject(error);
    pending.clear();
  };
  worker.addEventListener('message', (event: MessageEvent<FromWorker>) => {
    const message = event.data;
    const call = pending.get(message.id);
    if (!call) return;
    if (message.type === 'result') {
      pending.delete(message.id);
      call.resolve(message.value);
    } else if (message.type === 'error') {
      pending.delete(message.id);
      call.reject(reviveError(message.error));
    } else {
      call.onEvent?.(message);
    }
  });
  worker.addEventListener('error', (event: ErrorEvent) => {
    event.preventDefault();
    fail(new WebgrpoError('Generation', `The policy worker failed: ${event.message || 'an uncaught error (see the worker console)'}.`));
  });
  worker.addEventListener('messageerror', () => fail(new WebgrpoError('Generation', 'A message from the policy worker could not be read.')));

  function call<T>(message: Outgoing, extra: { transfer?: Transferable[]; signal?: AbortSignal; onEvent?: (m: FromWorker) => void } = {}): Promise<T> {
    if (dead) return Promise.reject(dead);
    const { signal } = extra;
    if (signal?.aborted) return Promise.reject(new AbortError(undefined, { cause: signal.reason }));
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => worker.postMessage({ id: nextId++, type: 'abort', target: id } satisfies ToWorker);
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = () => signal?.removeEventListener('abort', onAbort);
      pending.set(id, {
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
      worker.postMessage({ ...message, id } as ToWorker, extra.transfer ?? []);
    });
  }

  let init: InitResult;
  try {
    init = await call<InitResult>(
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
      if (dead) return;
      try {
        await call({ type: 'dispose' });
      } finally {
        worker.terminate();
        fail(new WebgrpoError('Generation', 'This worker policy was disposed; create a new one.'));
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
