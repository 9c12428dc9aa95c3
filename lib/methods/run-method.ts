/** Which method a stored run uses: a training-free mode, or its kind for the other loops. */
import type { RunRecord } from '../store/records/index.js';
import type { LoopMode } from './training-free/record.js';

export type RunMethod = LoopMode | 'gradient' | 'lora' | 'router';

/** The method a stored run uses: `'lessons'` or `'exemplars'` for a training-free run, else its kind. */
export function runMethod(run: RunRecord): RunMethod {
  return run.kind === 'training-free' ? run.config.mode : run.kind;
}
