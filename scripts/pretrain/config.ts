/**
 * The skill model's architecture and its pretraining recipe. The size is chosen for speed on a
 * shared two-core machine (the engine's tokens/s at this shape are in the model card), not for
 * quality: about 0.4M parameters, 1.6 MB of fp32 weights.
 */
import type { ModelSpec } from '../build-model/spec.js';

export const SKILL_SPEC: ModelSpec = {
  seed: 20261201,
  hiddenSize: 96,
  numLayers: 4,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 24,
  intermediateSize: 256,
  tieWordEmbeddings: true,
  reservedTokens: 0,
  ropeTheta: 10000,
  rmsNormEps: 1e-5,
  maxPositionEmbeddings: 2048,
};

export interface PretrainConfig {
  /** Seed of the corpus and its order. */
  seed: number;
  /** Optimizer updates. */
  steps: number;
  /** Examples per update. */
  batch: number;
  /** Peak learning rate, reached after `warmup` updates, then a cosine down to `lrFloor` x peak. */
  lr: number;
  warmup: number;
  lrFloor: number;
  weightDecay: number;
  maxGradNorm: number;
  /**
   * Share of examples whose reply is a plausible wrong answer (a near miss), as real data holds
   * mistakes: the model learns the right answer as the likeliest but not the only one, so sampling
   * at temperature 1 lands at a partial skill that reward can sharpen.
   */
  wrongShare: number;
  /**
   * Threads onnxruntime computes the gradients on (a fixed count: the gradient's summation order can
   * depend on it). One: at the skill model's size a batch's graphs are too small to split, and two
   * threads cost 2x the CPU time of one on the shared two-core machine (BENCHMARKS "pretrain-graph").
   */
  workers: number;
}

/** What a training run needs of a config: the updates, their schedule and the optimizer, not the corpus. */
export type TrainSchedule = Omit<PretrainConfig, 'wrongShare'>;

export const PRETRAIN: PretrainConfig = {
  seed: 17,
  steps: 1100,
  batch: 32,
  lr: 3e-3,
  warmup: 60,
  lrFloor: 0.05,
  weightDecay: 0,
  maxGradNorm: 1,
  wrongShare: 0.3,
  workers: 1,
};

/** The learning rate of update `step` (0-based): linear warmup, then cosine to lrFloor x peak. */
export function learningRate(config: TrainSchedule, step: number): number {
  if (step < config.warmup) return (config.lr * (step + 1)) / config.warmup;
  const progress = (step - config.warmup) / Math.max(1, config.steps - config.warmup);
  return config.lr * (config.lrFloor + (1 - config.lrFloor) * 0.5 * (1 + Math.cos(Math.PI * progress)));
}

/**
 * The second phase, continued from the first phase's weights. It does three things the first
 * corpus does not:
 *  - more near misses (`wrongShare`), so that sampling at temperature 1 lands in the partial-skill
 *    band while the likeliest answer stays right: GRPO's job is then to turn the skill the model
 *    shows greedily into the skill it shows when sampling;
 *  - a share of chats with worked examples in their prompt (`exemplarShare`), in the exact form a
 *    Training-Free run renders its exemplars, so the model has seen such prompts; their replies
 *    are near misses less often (`exemplarWrongShare`), as curated few-shot prompts are cleaner data;
 *  - count-letter problems whose answer is 1 kept at `countLetterOneShare` (about three in four
 *    are 1 otherwise), so that replying "1" is no longer the best guess.
 * Tasks in `taskShares` (skillTasks order): more of the two the first phase left weakest.
 */
export interface ContinueConfig extends PretrainConfig {
  taskShares: readonly number[];
  exemplarShare: number;
  exemplarWrongShare: number;
  /** Worked examples per exemplar prompt: 1 to this many. */
  maxExemplars: number;
  countLetterOneShare: number;
}

export const CONTINUE: ContinueConfig = {
  seed: 18,
  steps: 320,
  batch: 32,
  lr: 1e-3,
  warmup: 20,
  lrFloor: 0.1,
  weightDecay: 0,
  maxGradNorm: 1,
  wrongShare: 0.5,
  workers: 1,
  taskShares: [0.3, 0.3, 0.2, 0.2],
  exemplarShare: 0.2,
  exemplarWrongShare: 0.1,
  maxExemplars: 6,
  countLetterOneShare: 0.34,
};

/**
 * The sorter model (sorter.ts, corpus-sorter.ts): webgrpo-skill continued mostly on sort-words,
 * with a fresh AdamW state. The reply shares make the copied order the likeliest reply on most
 * held-out problems while T=1 samples hold the sorted one on most: the RLVR situation, where
 * reward lifts pass@1 towards pass@k. Measured while choosing them (held-out greedy / T=1 /
 * pass@8, BENCHMARKS "teach"): copy 0.5 for 2000 updates 42.7 / 35.0 / 86.5, copy 0.56 36.5 /
 * 29.9 / 76.0; these shares with a quarter of other tasks 28.1 / 28.0 / 74.0.
 */
export interface SorterConfig extends TrainSchedule {
  /** Share of replies that copy the prompt's order (right when the prompt is already sorted). */
  copyShare: number;
  /** Share with a word written twice in place of the next: "cat fig owl" -> "cat cat owl". */
  twiceShare: number;
  /** Share with two adjacent words swapped. */
  swapShare: number;
  /** Share of the chats that are the other skill tasks (corpus.ts), with `otherWrongShare` near misses. */
  otherShare: number;
  otherWrongShare: number;
}

/** Updates between the sorter run's checkpoints: under a minute of training on the shared two-core machine. */
export const SORTER_CHECKPOINT_EVERY = 20;

export const SORTER: SorterConfig = {
  seed: 43,
  steps: 2400,
  batch: 32,
  lr: 2e-3,
  warmup: 50,
  lrFloor: 0.1,
  weightDecay: 0,
  maxGradNorm: 1,
  workers: 1,
  copyShare: 0.58,
  twiceShare: 0.1,
  swapShare: 0.05,
  otherShare: 0.25,
  otherWrongShare: 0.3,
};
