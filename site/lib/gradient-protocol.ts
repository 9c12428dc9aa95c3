/**
 * What the page asks the model's worker for when it runs gradient GRPO there (the trainer needs
 * the policy's head and hidden states in the realm of the inference engine). The runs travel by
 * the worker transport's own run protocol (`exposeRuns` / `workerRun` of lib/worker/runs.ts);
 * this is only the request, plain data: reward functions travel by name, as they are stored with
 * the run. The worker reports the group being written as a `GroupStream`.
 */
import type { DatasetItem } from '../../lib/index.js';
import type { GradientGrpoOptions } from '../../lib/grad.js';

/** gradientGrpo's options that are settings, not handles or data. */
export type GradientSettings = Omit<GradientGrpoOptions, 'policy' | 'rewards' | 'store' | 'signal' | 'dataset' | 'task' | 'runId' | 'initialAdapter'>;

export interface RewardSpec {
  name: string;
  weight: number;
}

export type TrainRequest =
  | { kind: 'start'; runId: string; dataset: DatasetItem[]; task?: string; rewards: RewardSpec[]; settings: GradientSettings }
  | { kind: 'resume'; runId: string; task?: string; rewards: RewardSpec[] };
