/**
 * How the page runs gradient GRPO in the model's worker. The trainer needs the policy's head and
 * its hidden states in the realm of the inference engine, so the loop runs where the model is and
 * the page holds a proxy of it: each run gets its own MessagePort, the page pulls the loop's
 * events one at a time (the loop is a rendezvous channel, so not pulling is pausing), and a
 * cancel aborts the run's signal in the worker. Everything that crosses is plain data: reward
 * functions travel by name, as they are stored with the run.
 */
import type { DatasetItem } from '../../lib/index.js';
import type { GradientEvent, GradientGrpoOptions } from '../../lib/grad.js';
import type { GroupStream } from './streaming.js';

/** gradientGrpo's options that are settings, not handles or data. */
export type GradientSettings = Omit<GradientGrpoOptions, 'policy' | 'rewards' | 'store' | 'signal' | 'dataset' | 'task' | 'runId' | 'initialAdapter'>;

export interface RewardSpec {
  name: string;
  weight: number;
}

export type TrainRequest =
  | { kind: 'start'; runId: string; dataset: DatasetItem[]; task?: string; rewards: RewardSpec[]; settings: GradientSettings }
  | { kind: 'resume'; runId: string; task?: string; rewards: RewardSpec[] };

/** Posted to the worker itself: a run, and the port it talks on. Everything else there is the policy's. */
export interface TrainMessage {
  webgrpo: 'gradient-run';
  request: TrainRequest;
  port: MessagePort;
}

export function isTrainMessage(data: unknown): data is TrainMessage {
  return typeof data === 'object' && data !== null && (data as Partial<TrainMessage>).webgrpo === 'gradient-run';
}

/** Page to worker, on the run's port. `stop`: the page stopped listening (the loop is ended). */
export type ToTrainer = { type: 'next' } | { type: 'cancel' } | { type: 'stop' };

/** Worker to page, on the run's port: one reply per `next`, and the group being written. */
export type FromTrainer =
  | { type: 'event'; event: GradientEvent }
  | { type: 'end' }
  | { type: 'error'; error: { name: string; message: string; code?: string } }
  | { type: 'stream'; stream: GroupStream | null };
