/**
 * Runs that live in a worker, next to the policy they use (a gradient run needs the policy's head
 * and hidden states in the realm of the inference engine), held by the page as async iterables of
 * their events, like a run on the page. Part of the worker transport beside `exposePolicy` and
 * `createWorkerPolicy`: each run gets its own MessagePort, the page pulls the run's events one at
 * a time (a run is a rendezvous channel, so not pulling is pausing), and a cancel aborts the
 * run's signal in the worker. Everything that crosses is plain data: the request is the caller's
 * own (reward functions travel by name, as they are stored with the run).
 *
 *   // worker: runs beside the policy, the rest of the scope for exposePolicy
 *   exposePolicy(load, exposeRuns(self, async (request, { signal, report }) => myRun(request, signal)));
 *   // page
 *   for await (const event of workerRun(worker, runId, request, { signal })) ...
 */
import type { WorkerScope } from './expose.js';
import { reviveError, serializeError, type SerializedError } from './protocol.js';

/** Posted to the worker itself: a run's request, and the port it talks on. */
export interface RunMessage {
  webgrpo: 'run';
  request: unknown;
  port: MessagePort;
}

/** Page to worker, on a run's port. */
export type ToRun = { type: 'next' } | { type: 'stop' } | { type: 'cancel' };

/** Worker to page, on a run's port: an event, a side report (a group being written), the end, a failure. */
export type FromRun = { type: 'event'; event: unknown } | { type: 'report'; data: unknown } | { type: 'end' } | { type: 'error'; error: SerializedError };

export function isRunMessage(data: unknown): data is RunMessage {
  return typeof data === 'object' && data !== null && (data as { webgrpo?: unknown }).webgrpo === 'run';
}

/** A run the worker started: its events, and what to do when it ends or is stopped (free what it holds). */
export interface WorkerSideRun {
  events: AsyncIterator<unknown>;
  /** After the last event (before the page hears the end). */
  finish?(): Promise<void>;
  /** The page stopped pulling. */
  stop?(): Promise<void>;
}

/** Starts a run in the worker from the page's request; `report` sends side data (not events) to the page. */
export type RunStarter = (request: unknown, context: { signal: AbortSignal; report(data: unknown): void }) => Promise<WorkerSideRun>;

/**
 * Serves runs on the worker's scope, and returns the scope `exposePolicy` should use, which no
 * longer sees them.
 */
export function exposeRuns(scope: WorkerScope, start: RunStarter): WorkerScope {
  scope.addEventListener('message', (event) => {
    if (isRunMessage(event.data)) serveRun(event.data, start);
  });
  return {
    postMessage: (message, transfer) => scope.postMessage(message, transfer),
    addEventListener: (type, listener) =>
      scope.addEventListener(type, (event) => {
        if (!isRunMessage(event.data)) listener(event);
      }),
  };
}

function serveRun({ request, port }: RunMessage, start: RunStarter): void {
  const controller = new AbortController();
  const post = (message: FromRun) => port.postMessage(message);
  const ready = start(request, { signal: controller.signal, report: (data) => post({ type: 'report', data }) });
  ready.catch(() => undefined); // reported on the first pull

  port.onmessage = async (event: MessageEvent<ToRun>) => {
    const message = event.data;
    if (message.type === 'cancel') {
      controller.abort();
      return;
    }
    try {
      const run = await ready;
      if (message.type === 'stop') {
        await run.events.return?.();
        await run.stop?.();
        port.close();
        return;
      }
      const next = await run.events.next();
      if (!next.done) return post({ type: 'event', event: next.value });
      await run.finish?.();
      post({ type: 'end' });
      port.close();
    } catch (error) {
      post({ type: 'error', error: serializeError(error) });
      port.close();
    }
  };
}

/** The part of a Worker this needs (a Worker, or a test double). */
export interface RunWorker {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: 'error', listener: () => void): void;
  removeEventListener(type: 'error', listener: () => void): void;
}

export interface WorkerRun<E> extends AsyncIterable<E> {
  readonly runId: string;
}

/**
 * A run in the worker as the page holds it: each `next()` pulls one event; the signal's abort
 * cancels it in the worker; `onReport` gets the worker's side reports.
 */
export function workerRun<E>(worker: RunWorker, runId: string, request: unknown, options: { signal: AbortSignal; onReport?: (data: unknown) => void }): WorkerRun<E> {
  let port: MessagePort | null = null;
  let waiting: { resolve: (reply: FromRun) => void; reject: (error: Error) => void } | null = null;
  let failure: Error | null = null;

  const onWorkerError = () => {
    failure = new Error('The model worker failed (see its console); reload the page and resume the run.');
    waiting?.reject(failure);
    waiting = null;
  };
  const send = (message: ToRun) => port?.postMessage(message);
  const close = () => {
    port?.close();
    worker.removeEventListener('error', onWorkerError);
  };
  const open = (): MessagePort => {
    const channel = new MessageChannel();
    channel.port1.onmessage = (event: MessageEvent<FromRun>) => {
      const reply = event.data;
      if (reply.type === 'report') return options.onReport?.(reply.data);
      const w = waiting;
      waiting = null;
      w?.resolve(reply);
    };
    worker.addEventListener('error', onWorkerError);
    worker.postMessage({ webgrpo: 'run', request, port: channel.port2 } satisfies RunMessage, [channel.port2]);
    const cancel = () => channel.port1.postMessage({ type: 'cancel' } satisfies ToRun);
    if (options.signal.aborted) cancel();
    else options.signal.addEventListener('abort', cancel, { once: true });
    return channel.port1;
  };

  return {
    runId,
    [Symbol.asyncIterator](): AsyncIterator<E> {
      return {
        async next() {
          if (failure) throw failure;
          port ??= open();
          const reply = new Promise<FromRun>((resolve, reject) => (waiting = { resolve, reject }));
          send({ type: 'next' });
          const message = await reply;
          if (message.type === 'event') return { value: message.event as E, done: false };
          close();
          if (message.type === 'end') return { value: undefined, done: true };
          if (message.type === 'error') throw reviveError(message.error);
          throw new Error(`Unexpected reply from the model worker: ${(message as { type: string }).type}.`);
        },
        async return() {
          send({ type: 'stop' });
          close();
          return { value: undefined, done: true };
        },
      };
    },
  };
}
