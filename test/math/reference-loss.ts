/**
 * An independent float64 transcription of TRL's `GRPOTrainer._compute_loss` (main after v1.9) onto nested
 * arrays, for every loss type and option, written to be obviously correct rather than fast:
 * whole-tensor steps in the order grpo_trainer.py applies them, with PyTorch's broadcasting of
 * (B, 1) against (B, T). It shares no code with lib/math.
 *
 * `detachedLogps` stands for `per_token_logps.detach()`: every detached quantity (oldLogps when
 * omitted, cispo's cap, vespo's phi, the off-policy mask) reads it, so a finite difference that
 * shifts `logps` alone differentiates exactly what autograd does.
 */
type Matrix = number[][];

export interface RefBatch {
  logps: Matrix;
  detachedLogps?: Matrix;
  oldLogps?: Matrix;
  refLogps?: Matrix;
  samplingLogps?: Matrix;
  advantages: number[];
  mask: Matrix;
  entropies?: Matrix;
  numItemsInBatch?: number;
}

export interface RefConfig {
  lossType?: 'grpo' | 'bnpo' | 'dr_grpo' | 'dapo' | 'cispo' | 'sapo' | 'luspo' | 'vespo';
  epsilon?: number;
  epsilonHigh?: number;
  delta?: number;
  beta?: number;
  importanceSamplingLevel?: 'token' | 'sequence';
  maxCompletionLength?: number;
  entropyCoef?: number;
  sapoTemperaturePos?: number;
  sapoTemperatureNeg?: number;
  vespoKPos?: number;
  vespoLambdaPos?: number;
  vespoKNeg?: number;
  vespoLambdaNeg?: number;
  importanceSampling?: { mode: 'token_truncate' | 'token_mask' | 'sequence_truncate' | 'sequence_mask'; clipMax?: number | null; clipMin?: number | null };
  offPolicyMaskThreshold?: number;
  topEntropyQuantile?: number;
  biasCorrectedKl?: boolean;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const cols = (m: Matrix) => m[0].length;
/** Elementwise op with PyTorch broadcasting of a (B, 1) operand along T. */
const zip = (a: Matrix, b: Matrix, f: (x: number, y: number) => number): Matrix => {
  const t = Math.max(cols(a), cols(b));
  return a.map((_, i) => Array.from({ length: t }, (_, j) => f(a[i][cols(a) === 1 ? 0 : j], b[i][cols(b) === 1 ? 0 : j])));
};
const map = (a: Matrix, f: (x: number, i: number, j: number) => number): Matrix => a.map((row, i) => row.map((x, j) => f(x, i, j)));
const mul = (a: Matrix, b: Matrix) => zip(a, b, (x, y) => x * y);
const rowSum = (a: Matrix): Matrix => a.map((row) => [sum(row)]);
const total = (a: Matrix) => sum(a.map(sum));

/** torch.quantile(x.float(), q): sort, then linear interpolation, all in float32. */
function quantileF32(values: number[], q: number): number {
  const f32 = new Float32Array(values);
  f32.sort();
  const r = new Float32Array(6);
  r[0] = q;
  r[1] = r[0] * (f32.length - 1); // rank
  const below = Math.floor(r[1]);
  const above = Math.ceil(r[1]);
  r[2] = r[1] - below; // weight
  r[3] = f32[above] - f32[below];
  if (r[2] < 0.5) {
    r[4] = r[2] * r[3];
    r[5] = f32[below] + r[4];
  } else {
    r[4] = 1 - r[2];
    r[4] = r[3] * r[4];
    r[5] = f32[above] - r[4];
  }
  return r[5];
}

export function refGrpoLoss(x: RefBatch, c: RefConfig = {}) {
  const lossType = c.lossType ?? 'dapo';
  const epsLow = c.epsilon ?? 0.2;
  const epsHigh = c.epsilonHigh ?? epsLow;
  const beta = c.beta ?? 0;
  const B = x.logps.length;
  const mask = x.mask;
  const detached = x.detachedLogps ?? x.logps;
  const old = x.oldLogps ?? detached;
  const A: Matrix = x.advantages.map((a) => [a]);
  const maskSum = total(mask);
  const rowLen = rowSum(mask);

  // get_high_entropy_mask(entropies, mask, 1 - top_entropy_quantile)
  let entropyMask: Matrix | undefined;
  if ((c.topEntropyQuantile ?? 1) < 1) {
    const nonPad = x.entropies!.flatMap((row, i) => row.filter((_, j) => mask[i][j] === 1));
    if (nonPad.length === 0) entropyMask = map(mask, () => 0);
    else {
      const threshold = quantileF32(nonPad, 1 - c.topEntropyQuantile!);
      entropyMask = map(mul(x.entropies!, mask), (e, i, j) => (e >= threshold && mask[i][j] === 1 ? 1 : 0));
    }
  }

  // get_off_policy_mask
  let offPolicyMask: Matrix | undefined;
  if (c.offPolicyMaskThreshold !== undefined) {
    const sampling = x.samplingLogps ?? old;
    const klDiv = zip(sampling, detached, (s, p) => s - p);
    const seqKl = rowSum(mul(klDiv, mask)).map((r, i) => [r[0] / Math.max(rowLen[i][0], 1)]);
    offPolicyMask = seqKl.map((r, i) => [A[i][0] >= 0 || r[0] <= c.offPolicyMaskThreshold! ? 1 : 0]);
  }

  // The importance-sampling ratio, inline as in the newest GRPOTrainer._compute_loss.
  let isRatio: Matrix | undefined;
  let sequenceLevelIs = false;
  if (c.importanceSampling) {
    const mode = c.importanceSampling.mode;
    const clipMax = c.importanceSampling.clipMax === undefined ? 3 : c.importanceSampling.clipMax;
    const clipMin = c.importanceSampling.clipMin ?? null;
    const diff = mul(zip(old, x.samplingLogps!, (o, s) => o - s), mask);
    sequenceLevelIs = mode === 'sequence_mask' || mode === 'sequence_truncate';
    isRatio = map(sequenceLevelIs ? rowSum(diff) : diff, Math.exp);
    if (mode.endsWith('truncate')) {
      isRatio = map(isRatio, (r) => {
        let v = r;
        if (clipMin !== null) v = Math.max(v, clipMin);
        if (clipMax !== null) v = Math.min(v, clipMax);
        return v;
      });
    } else {
      const lo = clipMin ?? -Infinity;
      const hi = clipMax ?? Infinity;
      isRatio = map(isRatio, (r) => (r < lo || r > hi ? 0 : r));
    }
  }

  const logRatio = zip(x.logps, old, (p, o) => p - o);
  const logW: Matrix =
    c.importanceSamplingLevel === 'sequence'
      ? rowSum(mul(logRatio, mask)).map((r, i) => [r[0] / Math.max(rowLen[i][0], 1)])
      : logRatio;
  let coef1 = map(logW, Math.exp);

  let perTokenKl: Matrix | undefined;
  if (beta !== 0) {
    perTokenKl = zip(x.refLogps!, x.logps, (r, p) => Math.exp(r - p) - (r - p) - 1);
    if (c.biasCorrectedKl) perTokenKl = mul(perTokenKl, coef1);
  }

  let perTokenLoss: Matrix;
  let phiSeq: Matrix | undefined;
  const clippedTypes = ['grpo', 'bnpo', 'dr_grpo', 'dapo', 'luspo'];
  if (lossType === 'cispo') {
    // The cap reads the detached ratio.
    const detachedLogW =
      c.importanceSamplingLevel === 'sequence'
        ? rowSum(mul(zip(detached, old, (p, o) => p - o), mask)).map((r, i) => [r[0] / Math.max(rowLen[i][0], 1)])
        : zip(detached, old, (p, o) => p - o);
    const clamped = map(detachedLogW, (v) => Math.min(Math.exp(v), epsHigh));
    perTokenLoss = mul(mul(map(clamped, (v) => -v), A), x.logps);
  } else if (clippedTypes.includes(lossType)) {
    const coef2 = map(coef1, (w) => Math.min(Math.max(w, 1 - epsLow), 1 + epsHigh));
    if (c.delta !== undefined) coef1 = map(coef1, (w) => Math.min(w, c.delta!));
    perTokenLoss = zip(mul(coef1, A), mul(coef2, A), (u, v) => -Math.min(u, v));
  } else if (lossType === 'sapo') {
    const temps = A.map((r) => [r[0] > 0 ? (c.sapoTemperaturePos ?? 1) : (c.sapoTemperatureNeg ?? 1.05)]);
    const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
    const soft = zip(zip(temps, coef1, (tau, w) => sigmoid(tau * (w - 1))), temps, (g, tau) => (g * 4) / tau);
    perTokenLoss = mul(map(soft, (v) => -v), A);
  } else {
    // get_gamma_weights, under no_grad: the per-token log-ratio of the detached log-probs.
    const lower = Math.log(1e-8);
    const clamp = (v: number, lo: number, hi: number) => Math.min(Math.max(v, lo), hi);
    const detachedLogRatio = zip(detached, old, (p, o) => p - o);
    let seqLogRatio = rowSum(mul(map(detachedLogRatio, (v) => clamp(v, -20, 20)), mask));
    if (isRatio) seqLogRatio = zip(seqLogRatio, rowSum(map(isRatio, (r) => clamp(Math.log(r), lower, 20))), (u, v) => u + v);
    const logWSeq = map(seqLogRatio, (v) => clamp(v, lower, 20));
    const wSeq = map(logWSeq, Math.exp);
    const k = A.map((r) => [r[0] >= 0 ? (c.vespoKPos ?? 2) : (c.vespoKNeg ?? 3)]);
    const lambda = A.map((r) => [Math.max(r[0] >= 0 ? (c.vespoLambdaPos ?? 3) : (c.vespoLambdaNeg ?? 2), 1e-4)]);
    const logPhi = logWSeq.map((r, i) => [lambda[i][0] + k[i][0] * r[0] - lambda[i][0] * wSeq[i][0]]);
    phiSeq = map(logPhi, (v) => (Number.isFinite(Math.exp(v)) ? Math.exp(v) : 0));
    perTokenLoss = mul(mul(map(phiSeq, (v) => -v), A), x.logps);
  }

  if (offPolicyMask) perTokenLoss = mul(perTokenLoss, offPolicyMask);
  if (entropyMask) perTokenLoss = mul(perTokenLoss, entropyMask);
  if (isRatio && lossType !== 'vespo') perTokenLoss = mul(perTokenLoss, isRatio);
  if (perTokenKl) perTokenLoss = zip(perTokenLoss, perTokenKl, (l, k) => l + beta * k);

  let loss: number;
  if (lossType === 'grpo' || lossType === 'sapo') {
    loss = sum(rowSum(mul(perTokenLoss, mask)).map((r, i) => r[0] / Math.max(rowLen[i][0], 1))) / B;
  } else if (lossType === 'bnpo') {
    loss = total(mul(perTokenLoss, mask)) / Math.max(maskSum, 1);
  } else if (lossType === 'dr_grpo') {
    loss = total(mul(perTokenLoss, mask)) / (B * c.maxCompletionLength!);
  } else if (lossType === 'luspo') {
    // (per_token_loss * mask.sum(1, keepdim=True)).mean(): over (B, 1) or over all of (B, T), padding included.
    const scaled = map(perTokenLoss, (v, i) => v * rowLen[i][0]);
    loss = total(scaled) / (B * cols(scaled));
  } else {
    loss = total(mul(perTokenLoss, mask)) / Math.max(x.numItemsInBatch ?? maskSum, 1);
  }

  let policyLoss: number | undefined;
  if (c.entropyCoef) {
    policyLoss = loss;
    const effective = entropyMask ? mul(mask, entropyMask) : mask;
    const globalCount = lossType === 'cispo' || lossType === 'dapo' || lossType === 'vespo';
    const entropyLoss = total(mul(x.entropies!, effective)) / Math.max(globalCount ? (x.numItemsInBatch ?? maskSum) : total(effective), 1);
    loss = loss - c.entropyCoef * entropyLoss;
  }

  const globalMaskedMean = (m: Matrix) => (cols(m) === 1 ? total(m) / m.length : total(mul(m, mask)) / Math.max(maskSum, 1));
  const maskedSeqMean = (m: Matrix) => (cols(m) === 1 ? m.map((r) => r[0]) : rowSum(mul(m, mask)).map((r, i) => r[0] / rowLen[i][0]));
  const nanmin = (xs: number[]) => (xs.every(Number.isNaN) ? NaN : Math.min(...xs.filter((v) => !Number.isNaN(v))));
  const nanmax = (xs: number[]) => (xs.every(Number.isNaN) ? NaN : Math.max(...xs.filter((v) => !Number.isNaN(v))));

  const metrics: Record<string, unknown> = {};
  if (perTokenKl) metrics.kl = globalMaskedMean(perTokenKl);
  if (x.entropies) metrics.entropy = globalMaskedMean(x.entropies);
  if (policyLoss !== undefined) metrics.policyLoss = policyLoss;
  if (clippedTypes.includes(lossType)) {
    const low = zip(coef1, A, (w, a) => (w < 1 - epsLow && a < 0 ? 1 : 0));
    const high = zip(coef1, A, (w, a) => (w > 1 + epsHigh && a > 0 ? 1 : 0));
    const region = zip(low, high, (l, h) => (l || h ? 1 : 0));
    metrics.clipRatioLow = globalMaskedMean(low);
    metrics.clipRatioHigh = globalMaskedMean(high);
    metrics.clipRatioRegion = globalMaskedMean(region);
    metrics.clipRatioLowMin = nanmin(maskedSeqMean(low));
    metrics.clipRatioHighMax = nanmax(maskedSeqMean(high));
  } else if (lossType === 'cispo') {
    metrics.cispoClipRatio = globalMaskedMean(zip(coef1, A, (w, a) => (w > epsHigh && a > 0 ? 1 : 0)));
  } else if (lossType === 'vespo') {
    metrics.vespoPhiMean = globalMaskedMean(phiSeq!);
  }
  if (isRatio) {
    const flat = sequenceLevelIs ? isRatio.map((r) => r[0]) : isRatio.flatMap((row, i) => row.filter((_, j) => mask[i][j] === 1));
    metrics.importanceSamplingRatio = flat.length
      ? { min: Math.min(...flat), mean: sum(flat) / flat.length, max: Math.max(...flat) }
      : { min: 0, mean: 0, max: 0 };
    const delta = old.flatMap((row, i) => row.map((o, j) => Math.abs(o - x.samplingLogps![i][j])).filter((_, j) => mask[i][j] === 1));
    metrics.samplingLogpDifference = delta.length ? { mean: sum(delta) / delta.length, max: Math.max(...delta) } : { mean: 0, max: 0 };
  }
  return { loss, metrics };
}
