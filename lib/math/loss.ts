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
import { resolveLossConfig, type GrpoLossConfig, type ResolvedLossConfig } from './loss-config.js';
import { highEntropyMask, importanceRatio, offPolicyKeep, type ImportanceRatio } from './loss-masks.js';
import { summarize, Tally, type GrpoLossMetrics } from './loss-metrics.js';
import { clippedTerm, gammaWeight, sapoTerm } from './loss-terms.js';
import { readBatch, type GrpoLossBatch, type LossInputs } from './loss-inputs.js';
import type { Rows } from './validate.js';

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
  const x = readBatch(batch, s);
  const f = tokenFactors(x, s);
  const sums: Sums = { loss: 0, kl: 0, phi: 0 };
  const tally = new Tally(x.b, s.level === 'sequence');
  const grad: number[][] = [];
  for (let i = 0; i < x.b; i++) grad.push(rowLoss(x, f, s, i, tally, sums));

  const metrics: GrpoLossMetrics = {};
  if (CLIPPED.has(s.lossType)) Object.assign(metrics, tally.clipMetrics(x.lengths, x.activeOr1));
  if (s.lossType === 'cispo') metrics.cispoClipRatio = tally.cispoRatio(x.activeOr1);
  if (s.lossType === 'vespo') metrics.vespoPhiMean = sums.phi / x.b;
  if (s.beta !== 0) metrics.kl = sums.kl / x.activeOr1;

  let loss = sums.loss;
  let entropyGrad: number[][] | undefined;
  if (x.entropies) {
    const bonus = entropyBonus(x, x.entropies, f.entropyMask, s);
    metrics.entropy = bonus.entropy;
    metrics.trainedEntropy = bonus.trainedEntropy;
    if (bonus.grad) {
      metrics.policyLoss = loss;
      loss -= bonus.value;
      entropyGrad = bonus.grad;
    }
  }
  if (f.ratio) Object.assign(metrics, samplingMetrics(x, f.ratio));
  return entropyGrad ? { loss, grad, entropyGrad, metrics } : { loss, grad, metrics };
}

/** The detached factors multiplied into the policy term (loss-masks.ts), and luspo's padded mean. */
interface TokenFactors {
  entropyMask: Uint8Array | undefined;
  /** The off-policy mask, per row. */
  keep: Uint8Array | undefined;
  ratio: ImportanceRatio | undefined;
  /** `ratio` where it multiplies the policy term (vespo folds it into its gamma weight instead). */
  ratioFactor: ImportanceRatio | undefined;
  /**
   * luspo's per-token loss has a token axis unless every factor is per row; TRL's mean then runs
   * over the whole padded (B, T) batch, each position weighted by its row's length.
   */
  padded: boolean;
}

function tokenFactors(x: LossInputs, s: ResolvedLossConfig): TokenFactors {
  const { b, t, mask } = x;
  const entropyMask = s.topEntropyQuantile < 1 ? highEntropyMask(x.entropies!, mask, b, t, 1 - s.topEntropyQuantile) : undefined;
  const keep =
    s.offPolicyMaskThreshold !== undefined ? offPolicyKeep(x.advantages, x.logps, x.sampling ?? x.old, mask, x.lengths, t, s.offPolicyMaskThreshold) : undefined;
  const ratio = s.importanceSampling ? importanceRatio(x.old, x.sampling!, mask, b, t, s.importanceSampling) : undefined;
  const ratioFactor = ratio && s.lossType !== 'vespo' ? ratio : undefined;
  const padded = s.lossType === 'luspo' && (s.level !== 'sequence' || s.beta !== 0 || entropyMask !== undefined || ratioFactor?.perToken === true);
  return { entropyMask, keep, ratio, ratioFactor, padded };
}

/** The aggregation: what each token's terms are weighted by in a row of `n` active tokens, per type. */
function tokenWeight(x: LossInputs, f: TokenFactors, s: ResolvedLossConfig, n: number): number {
  switch (s.lossType) {
    case 'grpo':
    case 'sapo':
      return 1 / (x.b * Math.max(n, 1));
    case 'bnpo':
      return 1 / x.activeOr1;
    case 'dr_grpo':
      return 1 / (x.b * s.maxCompletionLength);
    case 'luspo':
      return f.padded ? n / (x.b * x.t) : 1 / x.b;
    default:
      return 1 / x.numItemsOr1;
  }
}

/** What the rows add up, in token order. */
interface Sums {
  loss: number;
  /** The KL over active tokens (its metric). */
  kl: number;
  /** vespo's gamma weights (their metric). */
  phi: number;
}

/** One row's constants: its advantage and weight, and at sequence level its ratio and policy term. */
interface Row {
  i: number;
  lp: ArrayLike<number>;
  op: ArrayLike<number>;
  a: number;
  n: number;
  w: number;
  keep: number;
  /** The per-row importance ratio (1 when none, or per token). */
  ratio: number;
  /** Sequence level: exp of the mean log-ratio over the row's active tokens; 1 at token level. */
  coef: number;
  /** Sequence level: the row's policy term and its slope in the mean log-ratio. */
  p: number;
  slope: number;
  /** vespo's detached gamma weight (0 for the other types). */
  phi: number;
}

/** Row i's terms added to `sums` (token by token) and its d loss / d logps. */
function rowLoss(x: LossInputs, f: TokenFactors, s: ResolvedLossConfig, i: number, tally: Tally, sums: Sums): number[] {
  const { t, mask } = x;
  const row = openRow(x, f, s, i, tally);
  sums.phi += row.phi;
  const sequence = s.level === 'sequence';
  // cispo and vespo weight logp itself; the others reach every token through the row's ratio at sequence level.
  const throughRatio = sequence && s.lossType !== 'cispo' && s.lossType !== 'vespo';
  const g = new Array<number>(t).fill(0);
  const term = new Float64Array(2);
  const kl = new Float64Array(2);
  // Sum of weight * factors over the tokens the row's sequence-level term reaches.
  let reach = 0;
  let klReach = 0;
  for (let j = 0; j < t; j++) {
    const at = i * t + j;
    const active = mask[at] === 1;
    if (!active && !f.padded) continue;
    const factor =
      row.keep * (f.entropyMask ? f.entropyMask[at] : 1) * (f.ratioFactor ? (f.ratioFactor.perToken ? f.ratioFactor.values[at] : row.ratio) : 1);
    policyTerm(row, j, active, s, tally, term);
    if (throughRatio) reach += row.w * factor;
    sums.loss += row.w * factor * term[0];
    g[j] += row.w * factor * term[1];
    if (s.beta !== 0) {
      klTerm(row, x.ref![i][j], j, s, kl);
      g[j] += kl[1];
      if (s.biasCorrectedKl && sequence) klReach += row.w * s.beta * kl[0];
      sums.loss += row.w * s.beta * kl[0];
      if (active) sums.kl += kl[0];
    }
  }
  if (sequence) {
    const chain = (reach * row.slope + klReach) / Math.max(row.n, 1);
    if (chain !== 0) for (let j = 0; j < t; j++) if (mask[i * t + j]) g[j] += chain;
  }
  return g;
}

function openRow(x: LossInputs, f: TokenFactors, s: ResolvedLossConfig, i: number, tally: Tally): Row {
  const { t, mask } = x;
  const lp = x.logps[i];
  const op = x.old[i];
  const a = x.advantages[i];
  const n = x.lengths[i];
  const row: Row = {
    i, lp, op, a, n,
    w: tokenWeight(x, f, s, n),
    keep: f.keep ? f.keep[i] : 1,
    ratio: f.ratioFactor && !f.ratioFactor.perToken ? f.ratioFactor.values[i] : 1,
    coef: 1,
    p: 0,
    slope: 0,
    phi: 0,
  };
  if (s.level === 'sequence') {
    let sum = 0;
    for (let j = 0; j < t; j++) if (mask[i * t + j]) sum += lp[j] - op[j];
    const logW = sum / Math.max(n, 1);
    row.coef = Math.exp(logW);
    const term = new Float64Array(2);
    if (CLIPPED.has(s.lossType)) tally.clip(i, clippedTerm(logW, a, s, term), a, s);
    else if (s.lossType === 'sapo') sapoTerm(logW, a, s, term);
    else if (s.lossType === 'cispo') tally.cispo(row.coef, a, s);
    row.p = term[0];
    row.slope = term[1];
  }
  if (s.lossType === 'vespo') row.phi = gammaWeight(lp, op, mask, i * t, t, f.ratio?.perToken ? f.ratio.values : undefined, a, s);
  return row;
}

/**
 * The policy term P at token j and its slope d P / d logp[j], into `out`. At sequence level the
 * clipped types and sapo take the row's term, whose slope reaches the token through the row's
 * ratio (rowLoss's chain), so the slope here is 0.
 */
function policyTerm(row: Row, j: number, active: boolean, s: ResolvedLossConfig, tally: Tally, out: Float64Array): void {
  const sequence = s.level === 'sequence';
  switch (s.lossType) {
    case 'cispo': {
      const coef = sequence ? row.coef : Math.exp(row.lp[j] - row.op[j]);
      if (!sequence) tally.cispo(coef, row.a, s);
      return weightedLogp(coef > s.epsilonHigh ? s.epsilonHigh : coef, row, j, out);
    }
    case 'vespo':
      return weightedLogp(row.phi, row, j, out);
    case 'sapo':
      if (sequence) return rowTerm(row, out);
      return sapoTerm(row.lp[j] - row.op[j], row.a, s, out);
    default: {
      if (sequence) return rowTerm(row, out);
      const capped = clippedTerm(row.lp[j] - row.op[j], row.a, s, out);
      if (active) tally.clip(row.i, capped, row.a, s);
    }
  }
}

/** cispo's and vespo's term: -c A logp with the weight c detached. */
function weightedLogp(c: number, row: Row, j: number, out: Float64Array): void {
  out[0] = -c * row.a * row.lp[j];
  out[1] = -c * row.a;
}

function rowTerm(row: Row, out: Float64Array): void {
  out[0] = row.p;
  out[1] = 0;
}

/**
 * The KL penalty at token j, k3 = exp(ref - logp) - (ref - logp) - 1 (times the ratio w when
 * bias-corrected), into out[0], and its weighted slope d (w_row beta KL) / d logp[j] into out[1]:
 * w (1 - e) + k3 dw/d logp, where at sequence level dw reaches every active token (rowLoss's chain).
 */
function klTerm(row: Row, ref: number, j: number, s: ResolvedLossConfig, out: Float64Array): void {
  const diff = ref - row.lp[j];
  const e = Math.exp(diff);
  const k3 = e - diff - 1;
  if (!s.biasCorrectedKl) {
    out[0] = k3;
    out[1] = row.w * s.beta * (1 - e);
    return;
  }
  const sequence = s.level === 'sequence';
  const coef = sequence ? row.coef : Math.exp(row.lp[j] - row.op[j]);
  out[0] = k3 * coef;
  out[1] = row.w * s.beta * coef * (1 - e + (sequence ? 0 : k3));
}

/**
 * The entropy metrics, and with entropyCoef the bonus subtracted from the loss over the trained
 * tokens (active, and high-entropy when topEntropyQuantile < 1) with its d loss / d entropies.
 */
function entropyBonus(
  x: LossInputs,
  entropies: Rows,
  entropyMask: Uint8Array | undefined,
  s: ResolvedLossConfig,
): { entropy: number; trainedEntropy: number; value: number; grad?: number[][] } {
  const { b, t, mask } = x;
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
  const metrics = { entropy: sum / x.activeOr1, trainedEntropy: trainedSum / Math.max(trainedCount, 1) };
  if (s.entropyCoef === 0) return { ...metrics, value: 0 };
  // cispo, dapo and vespo divide the trained tokens' entropy sum by their global token count
  // (numItemsInBatch), so it adds up to the mean over an accumulation window; the others take
  // the mean over the trained tokens.
  const denominator = GLOBAL_NORMALIZED.has(s.lossType) ? x.numItemsOr1 : Math.max(trainedCount, 1);
  const slope = -s.entropyCoef / denominator;
  const grad: number[][] = [];
  for (let i = 0; i < b; i++) {
    const row = new Array<number>(t).fill(0);
    for (let j = 0; j < t; j++) if (mask[i * t + j] && (!entropyMask || entropyMask[i * t + j])) row[j] = slope;
    grad.push(row);
  }
  return { ...metrics, value: (s.entropyCoef * trainedSum) / denominator, grad };
}

/** The importance ratio's summary, and how far the trainer's old log-probs are from the sampler's. */
function samplingMetrics(x: LossInputs, ratio: ImportanceRatio): Pick<GrpoLossMetrics, 'importanceSamplingRatio' | 'samplingLogpDifference'> {
  const { b, t, mask } = x;
  let diffSum = 0;
  let diffMax = 0;
  for (let i = 0; i < b; i++) {
    for (let j = 0; j < t; j++) {
      if (!mask[i * t + j]) continue;
      const d = Math.abs(x.old[i][j] - x.sampling![i][j]);
      diffSum += d;
      if (d > diffMax) diffMax = d;
    }
  }
  return {
    importanceSamplingRatio: summarize(ratio.values, ratio.perToken ? mask : undefined),
    samplingLogpDifference: { mean: x.active ? diffSum / x.active : 0, max: diffMax },
  };
}
