/**
 * The typed batch contract of a grouped GRPO step, after artifex's JAX GRPO trainer
 * (artifex's `GeneratedBatch` → `GeneratedSequenceBatch` → `SequenceRolloutBatch` →
 * `GroupRolloutBatch`, and `GRPOConfig`). Each layer adds one thing and its constructor checks
 * it, so a batch that reaches `grpoLoss` is known to be well formed:
 *
 *   GeneratedBatch          completion token ids (+ sequence-level rewards)
 *   GeneratedSequenceBatch  + which tokens are the response (mask)
 *   SequenceRolloutBatch    + log-probs of the policy that sampled them
 *   GroupRolloutBatch       + how many consecutive rows share a prompt
 *
 * Unlike the JAX original, sequences hold completion tokens only (no prompt prefix), so masks and
 * log-probs align one to one with the tokens instead of with `sequences[:, 1:]`.
 */
import { InvalidInputError } from '../errors.js';
import { computeAdvantages, type AdvantageOptions, type AdvantageResult, type RewardTable } from './advantages.js';
import { resolveLossConfig, type GrpoLossConfig, type ImportanceSamplingLevel, type LossType } from './loss-config.js';
import type { GrpoLossBatch } from './loss-inputs.js';
import { allFinite, describe, finiteNumber, integerAtLeast, isArrayLike, rowsShape, type Rows } from './validate.js';

/** Completion token ids, B rows of T, with optional sequence-level rewards: the first layer of a step's batch. */
export class GeneratedBatch {
  /** B rows of T completion token ids. */
  readonly outputs: Rows;
  /** Sequence-level rewards: one per row, or one row of K (one per reward function). */
  readonly rewards: RewardTable | undefined;

  constructor(init: { outputs: Rows; rewards?: RewardTable }) {
    const [b] = rowsShape('outputs', init?.outputs, undefined, 'outputs');
    for (let i = 0; i < b; i++) {
      const row = init.outputs[i];
      for (let j = 0; j < row.length; j++) {
        if (!Number.isInteger(row[j]) || row[j] < 0) {
          throw new InvalidInputError('outputs', `[${i}][${j}] is ${describe(row[j])}; token ids are integers >= 0.`);
        }
      }
    }
    if (init.rewards !== undefined && (!isArrayLike(init.rewards) || init.rewards.length !== b)) {
      throw new InvalidInputError('rewards', `must hold one entry per output row (${b}), got ${describe(init.rewards)}.`);
    }
    this.outputs = init.outputs;
    this.rewards = init.rewards;
  }

  get batchSize(): number {
    return this.outputs.length;
  }

  /** Tokens per row (rows are padded to one length). */
  get length(): number {
    return this.outputs[0].length;
  }
}

/** A `GeneratedBatch` plus its response mask: which tokens count in the loss. */
export class GeneratedSequenceBatch {
  readonly generation: GeneratedBatch;
  /** B rows of T: 1 for response tokens that count in the loss, 0 for padding. */
  readonly responseMask: Rows;

  /** Without `responseMask` every token counts. */
  constructor(init: { generation: GeneratedBatch; responseMask?: Rows }) {
    if (!(init?.generation instanceof GeneratedBatch)) {
      throw new InvalidInputError('generation', 'must be a GeneratedBatch.');
    }
    const shape: [number, number] = [init.generation.batchSize, init.generation.length];
    if (init.responseMask === undefined) {
      this.responseMask = Array.from({ length: shape[0] }, () => new Array<number>(shape[1]).fill(1));
    } else {
      rowsShape('responseMask', init.responseMask, shape, 'outputs');
      for (const [i, row] of init.responseMask.entries()) {
        for (let j = 0; j < row.length; j++) {
          if (row[j] !== 0 && row[j] !== 1) {
            throw new InvalidInputError('responseMask', `[${i}][${j}] is ${describe(row[j])}; the mask holds 0 or 1 per token.`);
          }
        }
      }
      this.responseMask = init.responseMask;
    }
    this.generation = init.generation;
  }

  get batchSize(): number {
    return this.generation.batchSize;
  }
  get sequences(): Rows {
    return this.generation.outputs;
  }
  get rewards(): RewardTable | undefined {
    return this.generation.rewards;
  }
}

/** A `GeneratedSequenceBatch` plus the log-probs of the policy that sampled each token. */
export class SequenceRolloutBatch {
  readonly sequenceBatch: GeneratedSequenceBatch;
  /** B rows of T: log-probs of each token under the policy that sampled it. */
  readonly oldLogProbs: Rows;

  constructor(init: { sequenceBatch: GeneratedSequenceBatch; oldLogProbs: Rows }) {
    if (!(init?.sequenceBatch instanceof GeneratedSequenceBatch)) {
      throw new InvalidInputError('sequenceBatch', 'must be a GeneratedSequenceBatch.');
    }
    const { generation } = init.sequenceBatch;
    rowsShape('oldLogProbs', init.oldLogProbs, [generation.batchSize, generation.length], 'outputs');
    allFinite('oldLogProbs', init.oldLogProbs);
    this.sequenceBatch = init.sequenceBatch;
    this.oldLogProbs = init.oldLogProbs;
  }

  get batchSize(): number {
    return this.sequenceBatch.batchSize;
  }
  get sequences(): Rows {
    return this.sequenceBatch.sequences;
  }
  get responseMask(): Rows {
    return this.sequenceBatch.responseMask;
  }
  get sequenceRewards(): RewardTable | undefined {
    return this.sequenceBatch.rewards;
  }
}

/** A `SequenceRolloutBatch` plus its group size: consecutive rows that share a prompt, whose rewards give the advantages. */
export class GroupRolloutBatch {
  readonly rollout: SequenceRolloutBatch;
  /** Consecutive rows per prompt; divides the batch size. */
  readonly groupSize: number;

  constructor(init: { rollout: SequenceRolloutBatch; groupSize: number }) {
    if (!(init?.rollout instanceof SequenceRolloutBatch)) {
      throw new InvalidInputError('rollout', 'must be a SequenceRolloutBatch.');
    }
    const groupSize = integerAtLeast('groupSize', init.groupSize, 2);
    const b = init.rollout.batchSize;
    if (b % groupSize !== 0) {
      throw new InvalidInputError('groupSize', `${groupSize} does not divide the batch size ${b}; rows must be whole consecutive groups.`);
    }
    if (init.rollout.sequenceRewards === undefined) {
      throw new InvalidInputError('rewards', 'a group rollout needs sequence-level rewards on its GeneratedBatch.');
    }
    this.rollout = init.rollout;
    this.groupSize = groupSize;
  }

  get batchSize(): number {
    return this.rollout.batchSize;
  }
  get numGroups(): number {
    return this.batchSize / this.groupSize;
  }
}

/** `grpoLoss` options that `GrpoConfig` passes through under their own names. */
export type GrpoLossExtras = Pick<
  GrpoLossConfig,
  | 'sapoTemperaturePos'
  | 'sapoTemperatureNeg'
  | 'vespoKPos'
  | 'vespoLambdaPos'
  | 'vespoKNeg'
  | 'vespoLambdaNeg'
  | 'importanceSampling'
  | 'offPolicyMaskThreshold'
  | 'topEntropyQuantile'
  | 'biasCorrectedKl'
>;
const LOSS_EXTRAS = [
  'sapoTemperaturePos',
  'sapoTemperatureNeg',
  'vespoKPos',
  'vespoLambdaPos',
  'vespoKNeg',
  'vespoLambdaNeg',
  'importanceSampling',
  'offPolicyMaskThreshold',
  'topEntropyQuantile',
  'biasCorrectedKl',
] as const satisfies readonly (keyof GrpoLossExtras)[];

/** artifex's `GRPOConfig` (the JAX trainer's configuration), with its defaults; `toLossConfig` maps it onto `grpoLoss`. */
export interface GrpoConfigInit extends GrpoLossExtras {
  /** Completions sampled per prompt; default 4. */
  numGenerations?: number;
  /** PPO clipping range epsilon; default 0.2. */
  clipParam?: number;
  /** KL coefficient; default 0.01. */
  beta?: number;
  /** Entropy bonus coefficient; default 0.01. */
  entropyCoeff?: number;
  /** Loss aggregation; default 'dapo' (as `grpoLoss`). */
  lossType?: LossType;
  /** Upper clipping range; default `clipParam`. */
  epsilonHigh?: number;
  delta?: number;
  importanceSamplingLevel?: ImportanceSamplingLevel;
  maxCompletionLength?: number;
}

/** artifex's `GRPOConfig` (generations per prompt, clipping, KL and entropy coefficients, loss type), checked when built; `toLossConfig()` gives `grpoLoss`'s options. */
export class GrpoConfig {
  readonly numGenerations: number;
  readonly clipParam: number;
  readonly beta: number;
  readonly entropyCoeff: number;
  readonly lossType: LossType;
  readonly epsilonHigh: number | undefined;
  readonly delta: number | undefined;
  readonly importanceSamplingLevel: ImportanceSamplingLevel;
  readonly maxCompletionLength: number | undefined;
  /** The other `grpoLoss` options given (TRL's newer loss types' parameters and corrections). */
  readonly lossExtras: Readonly<GrpoLossExtras>;

  constructor(init: GrpoConfigInit = {}) {
    this.numGenerations = integerAtLeast('numGenerations', init.numGenerations ?? 4, 2);
    this.clipParam = finiteNumber('clipParam', init.clipParam ?? 0.2, { min: 0 });
    this.beta = finiteNumber('beta', init.beta ?? 0.01, { min: 0 });
    this.entropyCoeff = finiteNumber('entropyCoeff', init.entropyCoeff ?? 0.01);
    this.lossType = init.lossType ?? 'dapo';
    this.epsilonHigh = init.epsilonHigh;
    this.delta = init.delta;
    this.importanceSamplingLevel = init.importanceSamplingLevel ?? 'token';
    this.maxCompletionLength = init.maxCompletionLength;
    const extras: GrpoLossExtras = {};
    for (const key of LOSS_EXTRAS) if (init[key] !== undefined) Object.assign(extras, { [key]: init[key] });
    this.lossExtras = Object.freeze(extras);
    resolveLossConfig(this.toLossConfig());
  }

  /** The `grpoLoss` config: clipParam → epsilon, entropyCoeff → entropyCoef, the rest as is. */
  toLossConfig(): GrpoLossConfig {
    const config: GrpoLossConfig = {
      lossType: this.lossType,
      epsilon: this.clipParam,
      beta: this.beta,
      entropyCoef: this.entropyCoeff,
      importanceSamplingLevel: this.importanceSamplingLevel,
    };
    if (this.epsilonHigh !== undefined) config.epsilonHigh = this.epsilonHigh;
    if (this.delta !== undefined) config.delta = this.delta;
    if (this.maxCompletionLength !== undefined) config.maxCompletionLength = this.maxCompletionLength;
    return { ...config, ...this.lossExtras };
  }
}

/** What the current policy (and the reference) say about a rollout's tokens. */
export interface PolicyScores {
  /** B rows of T: log-probs under the policy being trained. */
  logps: Rows;
  /** B rows of T: reference log-probs; needed when beta is not 0. */
  refLogps?: Rows;
  /** B rows of T: token entropies; needed when the entropy coefficient is not 0. */
  entropies?: Rows;
}

/**
 * Turns a grouped rollout and fresh policy scores into a `grpoLoss` batch: advantages from the
 * sequence rewards (groups of `batch.groupSize`), or the given ones when they were computed
 * before (a training loop's, which it also stored and showed), the rollout's log-probs as
 * `oldLogps` and its response mask as the mask. Also returns the advantage statistics for logging.
 */
export function rolloutLossBatch(
  batch: GroupRolloutBatch,
  scores: PolicyScores,
  advantageOptions: Omit<AdvantageOptions, 'groupSize'> | AdvantageResult = {},
): { batch: GrpoLossBatch; advantages: AdvantageResult } {
  if (!(batch instanceof GroupRolloutBatch)) throw new InvalidInputError('batch', 'must be a GroupRolloutBatch.');
  const advantages = isAdvantageResult(advantageOptions)
    ? checkAdvantages(advantageOptions, batch.batchSize)
    : computeAdvantages(batch.rollout.sequenceRewards!, { ...advantageOptions, groupSize: batch.groupSize });
  const lossBatch: GrpoLossBatch = {
    logps: scores.logps,
    oldLogps: batch.rollout.oldLogProbs,
    advantages: advantages.advantages,
    mask: batch.rollout.responseMask,
  };
  if (scores.refLogps) lossBatch.refLogps = scores.refLogps;
  if (scores.entropies) lossBatch.entropies = scores.entropies;
  return { batch: lossBatch, advantages };
}

function isAdvantageResult(value: Omit<AdvantageOptions, 'groupSize'> | AdvantageResult): value is AdvantageResult {
  return 'advantages' in value && Array.isArray((value as AdvantageResult).advantages);
}

/** Given advantages: one finite value per row of the batch. */
function checkAdvantages(result: AdvantageResult, rows: number): AdvantageResult {
  if (result.advantages.length !== rows) {
    throw new InvalidInputError('advantages', `must hold one advantage per row of the batch (${rows}), got ${result.advantages.length}.`);
  }
  allFinite('advantages', [result.advantages]);
  return result;
}
