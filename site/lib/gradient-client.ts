/**
 * The page's side of gradient runs (see gradient-protocol.ts): a run in the model's worker, held
 * as an async iterable of its events, like a loop on the page. Each `next()` pulls one event, so
 * the `Runner` pauses it by not pulling; the signal's abort cancels it in the worker.
 */
import type { GradientEvent } from '../../lib/grad.js';
import type { FromTrainer, ToTrainer, TrainMessage, TrainRequest } from './gradient-protocol.js';
import type { GroupStream } from './streaming.js';

export interface WorkerRun extends AsyncIterable<GradientEvent> {
  readonly runId: string;
}

/** The part of a Worker this needs (a Worker, or a test double). */
export interface TrainerWorker {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: 'error', listener: () => void): void;
  removeEventListener(type: 'error', listener: () => void): void;
}

export function workerGradientRun(worker: TrainerWorker, request: TrainRequest, options: { signal: AbortSignal; onStream: (stream: GroupStream | null) => void }): WorkerRun {
  let port: MessagePort | null = null;
  let waiting: { resolve: (reply: FromTrainer) => void; reject: (error: Error) => void } | null = null;
  let failure: Error | null = null;

  const onWorkerError = () => {
    failure = new Error('The model worker failed (see its console); reload the page and resume the run.');
    waiting?.reject(failure);
    waiting = null;
  };
  const send = (message: ToTrainer) => port?.postMessage(message);
  const close = () => {
    port?.close();
    worker.removeEventListener('error', onWorkerError);
  };
  const open = (): MessagePort => {
    const channel = new MessageChannel();
    channel.port1.onmessage = (event: MessageEvent<FromTrainer>) => {
      const reply = event.data;
      if (reply.type === 'stream') return options.onStream(reply.stream);
      const w = waiting;
      waiting = null;
      w?.resolve(reply);
    };
    worker.addEventListener('error', onWorkerError);
    worker.postMessage({ webgrpo: 'gradient-run', request, port: channel.port2 } satisfies TrainMessage, [channel.port2]);
    const cancel = () => channel.port1.postMessage({ type: 'cancel' } satisfies ToTrainer);
    if (options.signal.aborted) cancel();
    else options.signal.addEventListener('abort', cancel, { once: true });
    return channel.port1;
  };

  return {
    runId: request.runId,
    [Symbol.asyncIterator](): AsyncIterator<GradientEvent> {
      return {
        async next() {
          if (failure) throw failure;
          port ??= open();
          const reply = new Promise<FromTrainer>((resolve, reject) => (waiting = { resolve, reject }));
          send({ type: 'next' });
          const message = await reply;
          if (message.type === 'event') return { value: message.event, done: false };
          close();
          if (message.type === 'end') return { value: undefined, done: true };
          if (message.type === 'error') throw Object.assign(new Error(message.error.message), { name: message.error.name, ...(message.error.code ? { code: message.error.code } : {}) });
          throw new Error(`Unexpected reply from the model worker: ${message.type}.`);
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
