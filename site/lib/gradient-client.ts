/**
 * The page's side of gradient and LoRA runs: a run in the model's worker (gradient-worker.ts), held as an
 * async iterable of its events through the worker transport's run protocol (`workerRun`), like a
 * loop on the page. Each `next()` pulls one event, so the `Runner` pauses it by not pulling; the
 * signal's abort cancels it in the worker; the worker's reports are the group being written.
 */
import { workerRun, type RunWorker, type WorkerRun } from '../../lib/index.js';
import type { GradientEvent, LoraEvent } from '../../lib/grad.js';
import type { TrainRequest } from './gradient-protocol.js';
import type { GroupStream } from './streaming.js';

export type { WorkerRun };

/** The part of a Worker this needs (a Worker, or a test double). */
export type TrainerWorker = RunWorker;

export function workerGradientRun(worker: TrainerWorker, request: TrainRequest, options: { signal: AbortSignal; onStream: (stream: GroupStream | null) => void }): WorkerRun<GradientEvent | LoraEvent> {
  return workerRun<GradientEvent | LoraEvent>(worker, request.runId, request, { signal: options.signal, onReport: (stream) => options.onStream(stream as GroupStream | null) });
}
