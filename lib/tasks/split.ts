/**
 * The held-out split of the skill tasks: a problem is held out when the FNV-1a hash of its prompt
 * is 0 modulo 5, so one problem in five is never in the pretraining corpus of the bundled skill
 * model (scripts/pretrain draws only `split: 'train'`). By default a skill task's dataset draws
 * held-out problems: any seed then measures the model on problems it has not seen.
 */
import { mulberry32, type Rng } from '../math/random.js';
import type { DatasetItem } from '../core/dataset.js';
import { InvalidInputError } from '../errors.js';
import type { DatasetOptions, Task } from './types.js';

export type Split = 'heldout' | 'train';

export interface SkillDatasetOptions extends DatasetOptions {
  /** 'heldout' (default): problems the bundled skill model never saw; 'train': the others. */
  split?: Split;
}

/** A task with a held-out split (the skill tasks, named-format). */
export interface SkillTask extends Task {
  dataset(options?: SkillDatasetOptions): DatasetItem[];
  /** The task card's word on its split: exactly what the held-out problems hold out, and what they share with training. */
  heldOut: string;
}

/** Which split a prompt belongs to. */
export function splitOf(prompt: string): Split {
  let hash = 0x811c9dc5;
  for (let i = 0; i < prompt.length; i++) hash = Math.imul(hash ^ prompt.charCodeAt(i), 0x01000193) >>> 0;
  return hash % 5 === 0 ? 'heldout' : 'train';
}

/** A problem: the user's message and the exact reply. */
export interface Problem {
  prompt: string;
  answer: string;
}

/** Draws `size` problems of the requested split from `draw` (rejecting the other split's; `draw` may draw from the split's own). */
export function splitDataset(name: string, draw: (random: Rng, split: Split) => Problem, { size = 8, seed = 0, split = 'heldout' }: SkillDatasetOptions = {}): DatasetItem[] {
  if (split !== 'heldout' && split !== 'train') throw new InvalidInputError('split', `must be 'heldout' or 'train', got ${String(split)}.`);
  const random = mulberry32(seed);
  return Array.from({ length: size }, (_, i): DatasetItem => {
    let problem = draw(random, split);
    while (splitOf(problem.prompt) !== split) problem = draw(random, split);
    return { id: `${name}-${split}-${seed}-${i}`, messages: [{ role: 'user', content: problem.prompt }], answer: problem.answer };
  });
}
