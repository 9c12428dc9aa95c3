/**
 * What the page asks the model's worker for when it runs gradient or LoRA GRPO there (the trainer
 * needs the policy's head and hidden states, or its model files and session, in the realm of the
 * inference engine). The runs travel by
 * the worker transport's own run protocol (`exposeRuns` / `workerRun` of lib/worker/runs.ts);
 * this is only the request, plain data: reward functions travel by name, as they are stored with
 * the run. The worker reports the group being written as a `GroupStream`.
 */
import type { DatasetItem } from '../../lib/index.js';
import type { GradientGrpoOptions, LoraGrpoOptions } from '../../lib/grad.js';

type NotSettings = 'policy' | 'rewards' | 'store' | 'signal' | 'dataset' | 'task' | 'runId' | 'initialAdapter';

/** gradientGrpo's options that are settings, not handles or data. */
export type GradientSettings = Omit<GradientGrpoOptions, NotSettings>;

/** loraGrpo's options that are settings, not handles or data. */
export type LoraSettings = Omit<LoraGrpoOptions, NotSettings>;

/** The methods that run in the worker. */
export type WorkerMethod = 'gradient' | 'lora';

export interface RewardSpec {
  name: string;
  weight: number;
}

export type TrainRequest =
  | { kind: 'start'; method: 'gradient'; runId: string; dataset: DatasetItem[]; task?: string; rewards: RewardSpec[]; settings: GradientSettings }
  | { kind: 'start'; method: 'lora'; runId: string; dataset: DatasetItem[]; task?: string; rewards: RewardSpec[]; settings: LoraSettings }
  | { kind: 'resume'; method: WorkerMethod; runId: string; task?: string; rewards: RewardSpec[] };
