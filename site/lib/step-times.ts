/**
 * How long a run will take, said before Start: from what `npm run bench -- playground-steps`
 * measured of the page's own runs (step-times.data.ts), for the very model, method, task and
 * per-step shape (group size, prompts per step, reply length) of the form; "unknown" anywhere
 * else, never a guess. Pure.
 */
import { formatDuration } from './eta.js';
import { plural } from './plural.js';
import type { Setup } from './setup.js';
import { STEP_TIMES as MEASURED } from './step-times.data.js';

export interface StepTime {
  model: string;
  method: string;
  task: string;
  groupSize: number;
  batchSize: number;
  maxNewTokens: number;
  /** The median step after the first, in headless Chromium on WebAssembly. */
  secondsPerStep: number;
  /** Start to the first step: the model loading and the base model's held-out answers. */
  startupSeconds: number;
}

/** What the bench measured, held to the row's type here: the data file is plain rows and imports nothing. */
const STEP_TIMES: readonly StepTime[] = MEASURED;

/** The measured step time of `setup`'s shape on `model`, or undefined. */
export function stepTimeOf(setup: Pick<Setup, 'method' | 'task' | 'groupSize' | 'batchSize' | 'maxNewTokens'>, model: string, times: readonly StepTime[] = STEP_TIMES): StepTime | undefined {
  return times.find((t) => t.model === model && t.method === setup.method && t.task === setup.task && t.groupSize === setup.groupSize && t.batchSize === setup.batchSize && t.maxNewTokens === setup.maxNewTokens);
}

/** The sentence under the run plan: the measured estimate for `steps` steps, or that it is unknown. */
export function durationBeforeStart(setup: Pick<Setup, 'method' | 'task' | 'groupSize' | 'batchSize' | 'maxNewTokens' | 'rateMyself'>, model: string, steps: number, times: readonly StepTime[] = STEP_TIMES): string {
  const after = 'once it runs, the header says the time left from its own steps';
  if (setup.rateMyself) return `How long it takes is up to you (each group waits for your ratings); ${after}.`;
  const measured = stepTimeOf(setup, model, times);
  if (!measured) return `How long it takes is unknown before Start: no run of this method, task, group size, batch and reply length on this model was measured; ${after}.`;
  const total = (measured.startupSeconds + steps * measured.secondsPerStep) * 1000;
  return `About ${formatDuration(total)} (measured in headless Chromium on 2 shared cores, WebAssembly: ${measured.startupSeconds} s to load and answer the held-out prompts, then ${measured.secondsPerStep} s per step for ${plural(steps, 'step')}; BENCHMARKS “playground-steps”), plus a held-out evaluation after each epoch; ${after}.`;
}
