/**
 * The GRPO objective family and its exact gradient with respect to the policy's per-token
 * log-probs: TRL's `GRPOTrainer._compute_loss` (trl/trainer/grpo_trainer.py, main of July 2026)
 * for one micro-batch on one process with gradient accumulation 1, for the loss types grpo,
 * bnpo, dr_grpo, dapo, cispo, sapo, luspo and vespo. test/math/trl-golden.test.ts checks it
 * against PyTorch's autograd of the same code.
 *
 * With w = exp(logp - oldLogp) per token, or exp(mask-mean of the row's log-ratios) at sequence
 * level (GSPO), the per-token loss is
 *
 *   L = P * offPolicyKeep * highEntropy * isRatio + beta * KL
 *
 *   P   clipped types: -min(min(w, delta) A, clip(w, 1 - epsilon, 1 + epsilonHigh) A)
 *       cispo: -sg(min(w, epsilonHigh)) A logp      sapo: -sigmoid(tau (w - 1)) 4 / tau A
 *       vespo: -sg(phi) A logp (phi: gamma weight of the row's ratio, isRatio folded into it)
 *   KL  exp(ref - logp) - (ref - logp) - 1, times w (undetached) when biasCorrectedKl
 *
 * then aggregated per type over active tokens (grpo, sapo: mean over rows of the row mean; bnpo:
 * over active tokens; dr_grpo: over B * maxCompletionLength; cispo, dapo, vespo: over
 * numItemsInBatch; luspo: each row's term times its length, averaged over rows, or, once a
 * per-token factor (the KL, the entropy mask, a token-level correction) gives it a token axis,
 * over every position of the padded B x T batch, padding included, as TRL's
 * `(per_token_loss * mask.sum(1, keepdim=True)).mean()` does), and reduced by the entropy bonus
 * over the trained tokens (active, and high-entropy when topEntropyQuantile < 1): entropyCoef
 * times their entropy sum over numItemsInBatch for cispo, dapo and vespo (TRL's global token
 * count, so micro-batches add up to the window's mean), over their number for the other types.
 *
 * The gradient follows PyTorch's autograd (see loss-terms.ts for the kinks); detached factors
 * (the importance ratio, the masks, cispo's cap, vespo's phi, and oldLogps when omitted) are
 * constants. Entropies are inputs here (functions of the logits, not of the log-probs), so the
 * bonus adds nothing to `grad`; its derivative in the entropies is `entropyGrad`.
 *
 * Deliberate differences from TRL: masked positions are skipped where TRL multiplies them by 0
 * (luspo's padded mean reads them, as TRL's does); inputs are validated (finite values, 0/1 mask,
 * matching shapes) with errors naming the argument.
 */
import { InvalidInputError } from '../errors.js';
import { resolveLossConfig, type GrpoLossConfig } from './loss-config.js';
import { highEntropyMask, importanceRatio, offPolicyKeep } from './loss-masks.js';
import { summarize, Tally, type GrpoLossMetrics } from './loss-metrics.js';
import { clippedTerm, gammaWeight, sapoTerm } from './loss-terms.js';
import { allFinite, describe, finiteNumber, isArrayLike, rowsShape, type Rows } from './validate.js';

export {
  resolveLossConfig,
  type GrpoLossConfig,
  type ImportanceSamplingLevel,
  type ImportanceSamplingMode,
  type ImportanceSamplingOptions,
  type LossType,
  type ResolvedLossConfig,
} from './loss-config.js';

export interface GrpoLossBatch {
  /** B rows of T: log p(token) under the policy being trained. */
  logps: Rows;
  /** B rows of T: log-probs under the policy of the previous update; default `logps`, detached (ratio 1). */
  oldLogps?: Rows;
  /** B rows of T: log-probs under the reference policy; required when `beta` is not 0. */
  refLogps?: Rows;
  /**
   * B rows of T: log-probs under the distribution each token was actually drawn from (filtered
   * or at another temperature); required by `importanceSampling`, and the off-policy mask's
   * sampling side when given (else `oldLogps`).
   */
  samplingLogps?: Rows;
  /** One advantage per row. */
  advantages: ArrayLike<number>;
  /** B rows of T, 1 for completion tokens that count, 0 for padding (booleans accepted). */
  mask: Rows<number | boolean>;
  /** B rows of T token entropies; required by `entropyCoef` and `topEntropyQuantile`. */
  entropies?: Rows;
  /**
   * TRL's num_items_in_batch, what cispo, dapo and vespo divide their loss and entropy bonus by;
   * default the mask's active tokens, which is TRL's count (taken after truncated completions
   * are masked). Pass the count over every micro-batch of an accumulation window to split one.
   */
  numItemsInBatch?: number;
}

export type { GrpoLossMetrics, RatioSummary } from './loss-metrics.js';

export interface GrpoLossResult {
  loss: number;
  /** d loss / d logps, B rows of T (0 at masked positions, but for luspo's padded mean). */
  grad: number[][];
  /** d loss / d entropies, B rows of T; present when entropyCoef is not 0. */
  entropyGrad?: number[][];
  metrics: GrpoLossMetrics;
}

const CLIPPED = new Set(['grpo', 'bnpo', 'dr_grpo', 'dapo', 'luspo']);
/** The types whose loss divides by numItemsInBatch. */
const GLOBAL_NORMALIZED = new Set(['cispo', 'dapo', 'vespo']);

/** The GRPO loss of a batch under the config's loss type and options, with its exact gradient with respect to the log-probs (and the entropies) and TRL's metrics. */
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
  const sampling = optionalRows('samplingLogps', batch.samplingLogps, shape);
  if (s.importanceSampling && !sampling) {
    throw new InvalidInputError(
      'samplingLogps',
      `are required by importanceSampling (mode '${s.importanceSampling.mode}'); pass the log-probs under the distribution the tokens were drawn from.`,
    );
  }
  const entropies = optionalRows('entropies', batch.entropies, shape);
  if (s.entropyCoef !== 0 && !entropies) {
    throw new InvalidInputError('entropies', `are required when entropyCoef is ${s.entropyCoef}; pass per-token entropies or set entropyCoef to 0.`);
  }
  if (s.topEntropyQuantile < 1 && !entropies) {
    throw new InvalidInputError('entropies', `are required when topEntropyQuantile is ${s.topEntropyQuantile}; pass per-token entropies or set it to 1.`);
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
  const numItems =
    batch.numItemsInBatch === undefined ? active : finiteNumber('numItemsInBatch', batch.numItemsInBatch, { min: 0 });
  const numItemsOr1 = Math.max(numItems, 1);

  const entropyMask = s.topEntropyQuantile < 1 ? highEntropyMask(entropies!, mask, b, t, 1 - s.topEntropyQuantile) : undefined;
  const keep =
    s.offPolicyMaskThreshold !== undefined ? offPolicyKeep(advantages, logps, sampling ?? old, mask, lengths, t, s.offPolicyMaskThreshold) : undefined;
  const ratio = s.importanceSampling ? importanceRatio(old, sampling!, mask, b, t, s.importanceSampling) : undefined;
  // vespo folds the correction into its gamma weight instead of multiplying by it.
  const ratioFactor = ratio && s.lossType !== 'vespo' ? ratio : undefined;

  const type = s.lossType;
  const clipped = CLIPPED.has(type);
  const sequence = s.level === 'sequence';
  // luspo's per-token loss has a token axis unless every factor is per row; TRL's mean then runs
  // over the whole padded (B, T) batch, each position weighted by its row's length.
  const padded = type === 'luspo' && (!sequence || s.beta !== 0 || entropyMask !== undefined || ratioFactor?.perToken === true);
  const tokenWeight = (n: number) => {
    switch (type) {
      case 'grpo':
      case 'sapo':
        return 1 / (b * Math.max(n, 1));
      case 'bnpo':
        return 1 / activeOr1;
      case 'dr_grpo':
        return 1 / (b * s.maxCompletionLength);
      case 'luspo':
        return padded ? n / (b * t) : 1 / b;
      default:
        return 1 / numItemsOr1;
    }
  };

  const grad: number[][] = [];
  const tally = new Tally(b, sequence);
  const term = new Float64Array(2);
  let loss = 0;
  let klSum = 0;
  let phiSum = 0;
  for (let i = 0; i < b; i++) {
    const lp = logps[i];
    const op = old[i];
    const rp = ref?.[i];
    const a = advantages[i];
    const n = lengths[i];
    const g = new Array<number>(t).fill(0);
    grad.push(g);
    const w = tokenWeight(n);
    const rowKeep = keep ? keep[i] : 1;
    const rowRatio = ratioFactor && !ratioFactor.perToken ? ratioFactor.values[i] : 1;

    // Sequence level: one ratio for the row, from the mean log-ratio over its active tokens.
    let rowCoef = 1;
    let rowP = 0;
    let rowSlope = 0;
    if (sequence) {
      let sum = 0;
      for (let j = 0; j < t; j++) if (mask[i * t + j]) sum += lp[j] - op[j];
      const logW = sum / Math.max(n, 1);
      rowCoef = Math.exp(logW);
      if (clipped) {
        tally.clip(i, clippedTerm(logW, a, s, term), a, s);
        rowP = term[0];
        rowSlope = term[1];
      } else if (type === 'sapo') {
        sapoTerm(logW, a, s, term);
        rowP = term[0];
        rowSlope = term[1];
      } else if (type === 'cispo') {
        tally.cispo(rowCoef, a, s);
      }
    }
    const phi = type === 'vespo' ? gammaWeight(lp, op, mask, i * t, t, ratio?.perToken ? ratio.values : undefined, a, s) : 0;
    phiSum += phi;

    // Sum of weight * factors over the tokens the row's sequence-level term reaches.
    let reach = 0;
    let klReach = 0;
    for (let j = 0; j < t; j++) {
      const at = i * t + j;
      const active = mask[at] === 1;
      if (!active && !padded) continue;
      const factor =
        rowKeep * (entropyMask ? entropyMask[at] : 1) * (ratioFactor ? (ratioFactor.perToken ? ratioFactor.values[at] : rowRatio) : 1);
      let p: number;
      let slope = 0;
      if (type === 'cispo' || type === 'vespo') {
        let c = phi;
        if (type === 'cispo') {
          const coef = sequence ? rowCoef : Math.exp(lp[j] - op[j]);
          if (!sequence) tally.cispo(coef, a, s);
          c = coef > s.epsilonHigh ? s.epsilonHigh : coef;
        }
        p = -c * a * lp[j];
        slope = -c * a;
      } else if (sequence) {
        p = rowP;
        reach += w * factor;
      } else {
        if (type === 'sapo') sapoTerm(lp[j] - op[j], a, s, term);
        else {
          const capped = clippedTerm(lp[j] - op[j], a, s, term);
          if (active) tally.clip(i, capped, a, s);
        }
        p = term[0];
        slope = term[1];
      }
      loss += w * factor * p;
      g[j] += w * factor * slope;
      if (s.beta !== 0) {
        const diff = rp![j] - lp[j];
        const e = Math.exp(diff);
        const k3 = e - diff - 1;
        let kl = k3;
        if (s.biasCorrectedKl) {
          const coef = sequence ? rowCoef : Math.exp(lp[j] - op[j]);
          kl = k3 * coef;
          // d(k3 w)/d logp = w (1 - e) + k3 dw/d logp; at sequence level dw reaches every active token.
          g[j] += w * s.beta * coef * (1 - e + (sequence ? 0 : k3));
          if (sequence) klReach += w * s.beta * kl;
        } else {
          g[j] += w * s.beta * (1 - e);
        }
        loss += w * s.beta * kl;
        if (active) klSum += kl;
      }
    }
    if (sequence) {
      const chain = (reach * rowSlope + klReach) / Math.max(n, 1);
      if (chain !== 0) for (let j = 0; j < t; j++) if (mask[i * t + j]) g[j] += chain;
    }
  }

  const metrics: GrpoLossMetrics = {};
  if (clipped) Object.assign(metrics, tally.clipMetrics(lengths, activeOr1));
  if (type === 'cispo') metrics.cispoClipRatio = tally.cispoRatio(activeOr1);
  if (type === 'vespo') metrics.vespoPhiMean = phiSum / b;
  if (s.beta !== 0) metrics.kl = klSum / activeOr1;

  let entropyGrad: number[][] | undefined;
  if (entropies) {
    let sum = 0;
    let trainedSum = 0;
    let trainedCount = 0;
    for (let i = 0; i < b; i++) {
      for (let j = 0; j < t; j++) {
        const at = i * t + j;
        if (!mask[at]) continue;
        sum += entropies[i][j];
        if (!entropyMask || entropyMask[at]) {
          trainedSum += entropies[i][j];
          trainedCount++;
        }
      }
    }
    metrics.entropy = sum / activeOr1;
    metrics.trainedEntropy = trainedSum / Math.max(trainedCount, 1);
    if (s.entropyCoef !== 0) {
      metrics.policyLoss = loss;
      // cispo, dapo and vespo divide the trained tokens' entropy sum by their global token count
      // (numItemsInBatch), so it adds up to the mean over an accumulation window; the others take
      // the mean over the trained tokens.
      const denominator = GLOBAL_NORMALIZED.has(type) ? numItemsOr1 : Math.max(trainedCount, 1);
      loss -= (s.entropyCoef * trainedSum) / denominator;
      const slope = -s.entropyCoef / denominator;
      entropyGrad = [];
      for (let i = 0; i < b; i++) {
        const row = new Array<number>(t).fill(0);
        for (let j = 0; j < t; j++) if (mask[i * t + j] && (!entropyMask || entropyMask[i * t + j])) row[j] = slope;
        entropyGrad.push(row);
      }
    }
  }
  if (ratio) {
    metrics.importanceSamplingRatio = summarize(ratio.values, ratio.perToken ? mask : undefined);
    let diffSum = 0;
    let diffMax = 0;
    for (let i = 0; i < b; i++) {
      for (let j = 0; j < t; j++) {
        if (!mask[i * t + j]) continue;
        const d = Math.abs(old[i][j] - sampling![i][j]);
        diffSum += d;
        if (d > diffMax) diffMax = d;
      }
    }
    metrics.samplingLogpDifference = { mean: active ? diffSum / active : 0, max: diffMax };
  }
  return entropyGrad ? { loss, grad, entropyGrad, metrics } : { loss, grad, metrics };
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
