/**
 * A loop run as its caller holds it: an async iterable of events that drives the loop as it is
 * iterated (a rendezvous channel, so the loop runs at the consumer's pace and stops when they stop),
 * or `result()` to run it to the end. Every method's run is one.
 */
import { AbortError, InvalidInputError } from '../errors.js';
import type { AnyRunRecord, LoopConfig, RunRecord } from '../store/records/index.js';
import type { Store } from '../store/store.js';
import { EventChannel } from './events.js';

export interface Run<E, R> extends AsyncIterable<E> {
  readonly runId: string;
  /** Runs the loop to its end (iterating the events if nobody else does) and resolves with its result. */
  result(): Promise<R>;
}

export class LoopRun<E, R> implements Run<E, R> {
  readonly runId: string;
  readonly #channel = new EventChannel<E>();
  readonly #internal = new AbortController();
  readonly #body: (emit: (event: E) => Promise<void>, signal: AbortSignal) => Promise<R>;
  #started: Promise<R> | undefined;
  #iterated = false;

  constructor(runId: string, body: (emit: (event: E) => Promise<void>, signal: AbortSignal) => Promise<R>) {
    this.runId = runId;
    this.#body = body;
  }

  #start(): Promise<R> {
    this.#started ??= this.#body((event) => this.#channel.push(event), this.#internal.signal).then(
      (result) => {
        this.#channel.end();
        return result;
      },
      (error: unknown) => {
        this.#channel.end({ error });
        throw error;
      },
    );
    return this.#started;
  }

  [Symbol.asyncIterator](): AsyncIterator<E> {
    if (this.#iterated) throw new InvalidInputError('run', 'the events of a run can be iterated only once; use result() to wait for the end.');
    this.#iterated = true;
    return {
      next: () => {
        this.#start().catch(() => undefined);
        return this.#channel.next();
      },
      // The consumer stopped listening (break, throw): stop the loop and let it release the run.
      return: async () => {
        this.#internal.abort(new AbortError('The event consumer stopped iterating.'));
        this.#channel.close();
        await this.#started?.catch(() => undefined);
        return { value: undefined, done: true };
      },
    };
  }

  async result(): Promise<R> {
    if (!this.#iterated) {
      for await (const event of this) void event;
    }
    return this.#start();
  }
}

/**
 * A stored run of a method's kind: a built-in kind's record, or for any other method the common
 * fields with the method's own config (the sampling and schedule settings every method has, and
 * whatever else it stores). Of no particular kind (`RunOf<string>`, as the driver and the registry
 * hold a run), any run a store keeps.
 */
export type RunOf<K extends string> = string extends K ? AnyRunRecord : K extends RunRecord['kind'] ? Extract<RunRecord, { kind: K }> : CustomRunRecord<K>;

export interface CustomRunRecord<K extends string> extends Omit<RunRecord, 'kind' | 'config'> {
  kind: K;
  config: LoopConfig & { [key: string]: unknown };
}

/** The stored run a resume continues, checked to exist and to be of one of the resuming method's kinds. */
export async function storedRun(store: Store, runId: string, kinds: readonly string[]): Promise<RunOf<string>> {
  const run = await store.getRun(runId);
  if (!run) throw new InvalidInputError('runId', `no run "${runId}" in this ${store.kind} store.`);
  if (!kinds.includes(run.kind)) {
    throw new InvalidInputError('runId', `"${runId}" is a ${run.kind} run; resume it with the resume function of the ${run.kind} method (or resumeRun(methodOf("${run.kind}"), ...) from webgrpo/method).`);
  }
  return run;
}

/** How a run stopped short: cancelled, or failed with a message. */
export type RunStop = { status: 'aborted' } | { status: 'failed'; error: string };

/**
 * What every loop does when its drive throws: store the run as aborted (the signal fired) or
 * failed (best effort: when the store itself failed, a full quota, its last good state stands),
 * and announce the end when the run had started (`announce` absent before that). Returns whether
 * it was an abort, which a started loop resolves with; anything else is rethrown.
 */
export async function stopRun(
  store: Store,
  runId: string,
  error: unknown,
  signal: AbortSignal,
  announce: ((end: RunStop) => Promise<void>) | undefined,
): Promise<boolean> {
  const aborted = signal.aborted || error instanceof AbortError;
  const end: RunStop = aborted ? { status: 'aborted' } : { status: 'failed', error: error instanceof Error ? error.message : String(error) };
  await store.setRunStatus(runId, end).catch(() => undefined);
  await announce?.(end);
  return aborted;
}
