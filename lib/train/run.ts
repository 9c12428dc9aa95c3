/**
 * A loop run as its caller holds it: an async iterable of events that drives the loop as it is
 * iterated (a rendezvous channel, so the loop runs at the consumer's pace and stops when they stop),
 * or `result()` to run it to the end. Shared by the training-free and gradient loops.
 */
import { AbortError, InvalidInputError } from '../errors.js';
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
