/**
 * How a run improves its policy. Each method is one entry: its label and explanation for the
 * picker, and how it starts and resumes a run. A new method (gradient GRPO) is one more entry.
 */
import {
  resumeTrainingFreeGrpo,
  trainingFreeGrpo,
  type LoopMode,
  type TrainingFreeGrpoOptions,
  type TrainingFreeRun,
  type ResumeOptions,
} from '../../lib/index.js';

export interface Method {
  id: string;
  label: string;
  /** One or two sentences for someone who has not read the paper. */
  summary: string;
  /** True when the model must also write critiques (small models cannot). */
  needsCritic: boolean;
  start(options: Omit<TrainingFreeGrpoOptions, 'mode'>): TrainingFreeRun;
  resume(runId: string, options: ResumeOptions): TrainingFreeRun;
}

function trainingFree(mode: LoopMode): Pick<Method, 'start' | 'resume'> {
  return {
    start: (options) => trainingFreeGrpo({ ...options, mode }),
    resume: (runId, options) => resumeTrainingFreeGrpo(runId, options),
  };
}

export const METHODS: readonly Method[] = [
  {
    id: 'exemplars',
    label: 'Training-free: exemplars',
    summary: 'When a group’s best answer beats the group mean, it is kept as a worked example and shown in later prompts. No critic, so it works with any model.',
    needsCritic: false,
    ...trainingFree('exemplars'),
  },
  {
    id: 'lessons',
    label: 'Training-free: lessons',
    summary: 'The Training-Free GRPO paper: the model compares better and worse answers of each group and writes short lessons into the library. Needs a model that can write JSON.',
    needsCritic: true,
    ...trainingFree('lessons'),
  },
];

export function methodOf(id: string): Method {
  return METHODS.find((m) => m.id === id) ?? METHODS[0];
}
