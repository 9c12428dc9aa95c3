/**
 * The clipped GRPO objective and its exact gradient with respect to the policy's per-token
 * log-probs: TRL's `GRPOTrainer._compute_loss` (trl/trainer/grpo_trainer.py) for one micro-batch
 * on one process with gradient accumulation 1, for the loss types grpo, bnpo, dr_grpo and dapo.
 *
 * Per active token, with w = exp(logp - oldLogp) (token level) or w = exp(mask-mean of the row's
 * log-ratios) (sequence level, GSPO):
 *
 *   loss_t = -min(w' * A, clip(w, 1 - epsilon, 1 + epsilonHigh) * A) + beta * KL_t
 *   w'     = min(w, delta) when delta is set (two-sided clipping; TRL clips w at delta only
 *            after computing the clipped copy), else w
 *   KL_t   = exp(ref - logp) - (ref - logp) - 1   (the k3 estimator)
 *
 * then aggregated per `lossType` and reduced by `entropyCoef * mask-mean(entropy)`.
 *
 * The gradient follows PyTorch's autograd conventions where the objective has kinks: `clamp`
 * passes the gradient at its bounds (inclusive), and `min` splits it equally between equal
 * branches. Entropies are inputs here (they are functions of the logits, not of the log-probs),
 * so the entropy term shifts the loss but adds nothing to `grad`.
 *
 * Deliberate differences from TRL: masked positions are skipped rather than multiplied by 0, so
 * a non-finite value there cannot turn the loss into NaN; inputs are validated (finite values,
 * 0/1 mask, matching shapes) with errors naming the argument.
 */
import { InvalidInputError } from '../errors.js';
import { allFinite, describe, finiteNumber, integerAtLeast, isArrayLike, oneOf, rowsShape, type Rows } from './validate.js';

export type LossType = 'grpo' | 'bnpo' | 'dr_grpo' | 'dapo';
export type ImportanceSamplingLevel = 'token' | 'sequence';

export interface GrpoLossBatch {
  /** B rows of T: log p(token) under the policy being trained. */
  logps: Rows;
  /** B rows of T: log-probs under the policy that sampled the tokens; default `logps` (ratio 1). */
  oldLogps?: Rows;
  /** B rows of T: log-probs under the reference policy; required when `beta` is not 0. */
  refLogps?: Rows;
  /** One advantage per row. */
  advantages: ArrayLike<number>;
  /** B rows of T, 1 for completion tokens that count, 0 for padding (booleans accepted). */
  mask: Rows<number | boolean>;
  /** B rows of T token entropies; required when `entropyCoef` is not 0. */
  entropies?: Rows;
}

export interface GrpoLossConfig {
  /** How per-token losses are averaged; default 'dapo'. */
  lossType?: LossType;
  /** Lower clipping range: ratios below 1 - epsilon are clipped; default 0.2. */
  epsilon?: number;
  /** Upper clipping range: ratios above 1 + epsilonHigh are clipped; default `epsilon`. */
  epsilonHigh?: number;
  /** Two-sided clipping: caps the unclipped ratio at delta (INTELLECT-2); off by default. */
  delta?: number;
  /** KL coefficient toward the reference policy; default 0. */
  beta?: number;
  /** 'token' ratios (default) or one ratio per sequence (GSPO). */
  importanceSamplingLevel?: ImportanceSamplingLevel;
  /** Completion length budget; the dr_grpo denominator is B * maxCompletionLength. */
  maxCompletionLength?: number;
  /** Entropy bonus: subtracts entropyCoef * mask-mean(entropies); default 0. */
  entropyCoef?: number;
}

export interface GrpoLossMetrics {
  /**
   * Share of ratios below 1 - epsilon with a negative advantage: a fraction of the active tokens
   * at token level; at sequence level a fraction of the B rows (TRL's `clip_ratio/low_mean`).
   */
  clipRatioLow: number;
  /** Same for ratios above 1 + epsilonHigh with a positive advantage (`clip_ratio/high_mean`). */
  clipRatioHigh: number;
  /** Either of the two (`clip_ratio/region_mean`). */
  clipRatioRegion: number;
  /** Mask-mean of the k3 KL estimate; present when beta is not 0. */
  kl?: number;
  /** Mask-mean of the entropies; present when entropies were given. */
  entropy?: number;
}

export interface GrpoLossResult {
  loss: number;
  /** d loss / d logps, B rows of T (0 at masked positions). */
  grad: number[][];
  metrics: GrpoLossMetrics;
}

/** A loss config with defaults filled in; `low`/`high` are the ratio bounds 1 - epsilon, 1 + epsilonHigh. */
export interface ResolvedLossConfig {
  lossType: LossType;
  low: number;
  high: number;
  delta: number;
  beta: number;
  level: ImportanceSamplingLevel;
  maxCompletionLength: number;
  entropyCoef: number;
}

export function grpoLoss(batch: GrpoLossBatch, config: GrpoLossConfig = {}): GrpoLossResult {
  const s = resolveLossConfig(config);
  if (batch === null || typeof batch !== 'object') {
    throw new InvalidInputError('batch', 'must be an object { logps, advantages, mask, ... }.');
  }
  const shape = rowsShape('logps', batch.logps);
  const [b, t] = shape;
  allFinite('logps', batch.logps);
  const logps = batch.logps;
  const old = optionalRows('oldLogps', batch.oldLogps, shape) ?? logps;
  const ref = optionalRows('refLogps', batch.refLogps, shape);
  if (s.beta !== 0 && !ref) {
    throw new InvalidInputError('refLogps', `is required when beta is ${s.beta}; pass the reference policy's log-probs or set beta to 0.`);
  }
  const entropies = optionalRows('entropies', batch.entropies, shape);
  if (s.entropyCoef !== 0 && !entropies) {
    throw new InvalidInputError('entropies', `are required when entropyCoef is ${s.entropyCoef}; pass per-token entropies or set entropyCoef to 0.`);
  }
  const advantages = readAdvantages(batch.advantages, b);
  const mask = readMask(batch.mask, shape);

  const lengths = new Float64Array(b);
  let active = 0;
  for (let i = 0; i < b; i++) {
    let n = 0;
    for (let j = 0; j < t; j++) n += mask[i * t + j];
    lengths[i] = n;
    active += n;
  }
  const activeOr1 = Math.max(active, 1);

  const grad: number[][] = [];
  let loss = 0;
  let low = 0;
  let high = 0;
  let region = 0;
  let kl = 0;
  // TRL's clip metrics test the ratio after the delta cap, and the sign of the advantage.
  const tally = (ratio: number, a: number) => {
    const isLow = ratio < s.low && a < 0;
    const isHigh = ratio > s.high && a > 0;
    if (isLow) low++;
    if (isHigh) high++;
    if (isLow || isHigh) region++;
  };
  const term = new Float64Array(2);
  for (let i = 0; i < b; i++) {
    const lp = logps[i];
    const op = old[i];
    const rp = ref?.[i];
    const a = advantages[i];
    const n = lengths[i];
    const g = new Array<number>(t).fill(0);
    grad.push(g);
    // Weight of one token's loss in the batch loss.
    const w =
      s.lossType === 'grpo' ? 1 / (b * Math.max(n, 1)) : s.lossType === 'dr_grpo' ? 1 / (b * s.maxCompletionLength) : 1 / activeOr1;

    // GSPO: one ratio per row, from the mean log-ratio over its active tokens.
    let seqSlope = 0;
    if (s.level === 'sequence') {
      let sum = 0;
      for (let j = 0; j < t; j++) if (mask[i * t + j]) sum += lp[j] - op[j];
      const ratio = clippedTerm(sum / Math.max(n, 1), a, s, term);
      loss += w * n * term[0];
      // Each active token moves the mean log-ratio by 1 / n.
      seqSlope = (w * n * term[1]) / Math.max(n, 1);
      tally(ratio, a);
    }

    for (let j = 0; j < t; j++) {
      if (!mask[i * t + j]) continue;
      let slope = seqSlope;
      if (s.level === 'token') {
        const ratio = clippedTerm(lp[j] - op[j], a, s, term);
        loss += w * term[0];
        slope = w * term[1];
        tally(ratio, a);
      }
      if (s.beta !== 0) {
        const diff = rp![j] - lp[j];
        const e = Math.exp(diff);
        const k3 = e - diff - 1;
        kl += k3;
        loss += w * s.beta * k3;
        slope += w * s.beta * (1 - e);
      }
      g[j] = slope;
    }
  }

  let entropyMean: number | undefined;
  if (entropies) {
    let sum = 0;
    for (let i = 0; i < b; i++) for (let j = 0; j < t; j++) if (mask[i * t + j]) sum += entropies[i][j];
    entropyMean = sum / activeOr1;
    if (s.entropyCoef !== 0) loss -= s.entropyCoef * entropyMean;
  }

  // TRL's global_masked_mean: token flags over active tokens, sequence flags over all rows.
  const clipDenominator = s.level === 'token' ? activeOr1 : b;
  const metrics: GrpoLossMetrics = {
    clipRatioLow: low / clipDenominator,
    clipRatioHigh: high / clipDenominator,
    clipRatioRegion: region / clipDenominator,
  };
  if (s.beta !== 0) metrics.kl = kl / activeOr1;
  if (entropyMean !== undefined) metrics.entropy = entropyMean;
  return { loss, grad, metrics };
}

/**
 * The clipped surrogate for one ratio w = exp(logRatio): writes -min(w'A, clip(w)A) to out[0]
 * and its derivative with respect to logRatio to out[1]; returns w' (the ratio TRL's clip
 * metrics test, after the delta cap).
 */
function clippedTerm(logRatio: number, a: number, s: ResolvedLossConfig, out: Float64Array): number {
  const w = Math.exp(logRatio);
  const clipped = w < s.low ? s.low : w > s.high ? s.high : w;
  const capped = w > s.delta ? s.delta : w;
  const unclippedLoss = capped * a;
  const clippedLoss = clipped * a;
  // d(w * A)/d logRatio = w * A, where the branch is not held constant by a clamp.
  const unclippedSlope = w > s.delta ? 0 : w * a;
  const clippedSlope = w >= s.low && w <= s.high ? w * a : 0;
  // `0 - x` rather than `-x`: a held-constant branch gives +0, not -0.
  if (unclippedLoss < clippedLoss) {
    out[0] = 0 - unclippedLoss;
    out[1] = 0 - unclippedSlope;
  } else if (unclippedLoss > clippedLoss) {
    out[0] = 0 - clippedLoss;
    out[1] = 0 - clippedSlope;
  } else {
    out[0] = 0 - unclippedLoss;
    out[1] = 0 - 0.5 * (unclippedSlope + clippedSlope);
  }
  return capped;
}

/** Validates a loss config and fills in TRL's defaults. */
export function resolveLossConfig(config: GrpoLossConfig): ResolvedLossConfig {
  if (config === null || typeof config !== 'object') {
    throw new InvalidInputError('config', `must be an object, got ${describe(config)}.`);
  }
  const lossType = oneOf('lossType', config.lossType ?? 'dapo', ['grpo', 'bnpo', 'dr_grpo', 'dapo'] as const);
  const epsilon = finiteNumber('epsilon', config.epsilon ?? 0.2, { min: 0 });
  const epsilonHigh = finiteNumber('epsilonHigh', config.epsilonHigh ?? epsilon, { min: 0 });
  const delta = config.delta === undefined || config.delta === null ? Infinity : finiteNumber('delta', config.delta, { above: 0 });
  const beta = finiteNumber('beta', config.beta ?? 0, { min: 0 });
  const level = oneOf('importanceSamplingLevel', config.importanceSamplingLevel ?? 'token', ['token', 'sequence'] as const);
  const entropyCoef = finiteNumber('entropyCoef', config.entropyCoef ?? 0);
  let maxCompletionLength = 0;
  if (lossType === 'dr_grpo' || config.maxCompletionLength !== undefined) {
    if (config.maxCompletionLength === undefined && lossType === 'dr_grpo') {
      throw new InvalidInputError('maxCompletionLength', "is required by lossType 'dr_grpo' (its loss is divided by B * maxCompletionLength).");
    }
    maxCompletionLength = integerAtLeast('maxCompletionLength', config.maxCompletionLength, 1);
  }
  return { lossType, low: 1 - epsilon, high: 1 + epsilonHigh, delta, beta, level, maxCompletionLength, entropyCoef };
}

function optionalRows(argument: string, rows: Rows | undefined, shape: [number, number]): Rows | undefined {
  if (rows === undefined || rows === null) return undefined;
  rowsShape(argument, rows, shape);
  allFinite(argument, rows);
  return rows;
}

function readAdvantages(advantages: ArrayLike<number>, b: number): ArrayLike<number> {
  if (!isArrayLike(advantages) || advantages.length !== b) {
    throw new InvalidInputError('advantages', `must hold one value per row of logps (${b}), got ${describe(advantages)}${isArrayLike(advantages) ? ` of ${advantages.length}` : ''}.`);
  }
  for (let i = 0; i < b; i++) {
    if (typeof advantages[i] !== 'number' || !Number.isFinite(advantages[i])) {
      throw new InvalidInputError('advantages', `[${i}] is ${describe(advantages[i])}; advantages must be finite numbers.`);
    }
  }
  return advantages;
}

/** The mask as flat 0/1 bytes, row-major. */
function readMask(mask: Rows<number | boolean>, shape: [number, number]): Uint8Array {
  rowsShape('mask', mask, shape);
  const [b, t] = shape;
  const out = new Uint8Array(b * t);
  for (let i = 0; i < b; i++) {
    const row = mask[i];
    for (let j = 0; j < t; j++) {
      const m = row[j];
      if (m === 1 || m === true) out[i * t + j] = 1;
      else if (m !== 0 && m !== false) {
        throw new InvalidInputError('mask', `[${i}][${j}] is ${describe(m)}; the mask holds 0 or 1 per token.`);
      }
    }
  }
  return out;
}
