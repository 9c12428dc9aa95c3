/**
 * The math core against the code one would write first: array-of-arrays, one temporary per
 * step. Both sides are checked to agree before they are timed.
 */
import { computeAdvantages, grpoLoss, LOSS_TYPES, mulberry32, tokenLogProbs, type GrpoLossConfig } from '../../lib/math.js';
import { refGrpoLoss, type RefConfig } from '../../test/math/reference-loss.js';
import { measure, ms, si } from './_measure.js';

/** Chunk into groups, reduce for mean and std, map: the textbook version (no missing rewards). */
function naiveAdvantages(rewards: number[], groupSize: number): number[] {
  const groups: number[][] = [];
  for (let i = 0; i < rewards.length; i += groupSize) groups.push(rewards.slice(i, i + groupSize));
  return groups.flatMap((g) => {
    const mean = g.reduce((a, b) => a + b, 0) / g.length;
    const std = Math.sqrt(g.reduce((a, r) => a + (r - mean) ** 2, 0) / (g.length - 1));
    return g.map((r) => (r - mean) / (std + 1e-4));
  });
}

interface LossInput {
  logps: number[][];
  oldLogps: number[][];
  refLogps: number[][];
  advantages: number[];
  mask: number[][];
}

/** The PyTorch code transcribed step by step onto nested arrays, with the gradient by the same route. */
function tensorStyleLoss(x: LossInput, epsilon: number, epsilonHigh: number, beta: number) {
  const a = x.advantages;
  const ratio = x.logps.map((row, i) => row.map((lp, t) => Math.exp(lp - x.oldLogps[i][t])));
  const clipped = ratio.map((row) => row.map((w) => Math.min(Math.max(w, 1 - epsilon), 1 + epsilonHigh)));
  const loss1 = ratio.map((row, i) => row.map((w) => w * a[i]));
  const loss2 = clipped.map((row, i) => row.map((w) => w * a[i]));
  const kl = x.logps.map((row, i) => row.map((lp, t) => Math.exp(x.refLogps[i][t] - lp) - (x.refLogps[i][t] - lp) - 1));
  const perToken = loss1.map((row, i) => row.map((l1, t) => -Math.min(l1, loss2[i][t]) + beta * kl[i][t]));
  const count = Math.max(x.mask.flat().reduce((s, m) => s + m, 0), 1);
  const loss = perToken.map((row, i) => row.reduce((s, v, t) => s + v * x.mask[i][t], 0)).reduce((s, v) => s + v, 0) / count;
  const grad = ratio.map((row, i) =>
    row.map((w, t) => {
      const inside = w >= 1 - epsilon && w <= 1 + epsilonHigh;
      const l1 = loss1[i][t];
      const l2 = loss2[i][t];
      const d = l1 < l2 ? w * a[i] : l1 > l2 ? (inside ? w * a[i] : 0) : inside ? w * a[i] : w * a[i] / 2;
      const dkl = 1 - Math.exp(x.refLogps[i][t] - x.logps[i][t]);
      return (x.mask[i][t] * (-d + beta * dkl)) / count;
    }),
  );
  return { loss, grad };
}

/** log_softmax by the book: a scaled copy of each row, then a second copy of log-probs. */
function naiveLogProbs(logits: Float32Array, v: number, ids: Int32Array, temperature: number) {
  const rows = ids.length;
  const logps = new Float64Array(rows);
  const entropy = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const z = Array.from(logits.subarray(r * v, (r + 1) * v), (x) => x / temperature);
    const m = z.reduce((a, b) => (b > a ? b : a), -Infinity);
    const lse = m + Math.log(z.reduce((s, x) => s + Math.exp(x - m), 0));
    const lp = z.map((x) => x - lse);
    logps[r] = lp[ids[r]];
    entropy[r] = -lp.reduce((s, l) => s + Math.exp(l) * l, 0);
  }
  return { logps, entropy };
}

function assertClose(a: ArrayLike<number>, b: ArrayLike<number>, what: string): void {
  for (let i = 0; i < a.length; i++) {
    if (Math.abs(a[i] - b[i]) > 1e-9 * Math.max(1, Math.abs(b[i]))) throw new Error(`${what}: ${a[i]} != ${b[i]} at ${i}`);
  }
}

interface Row {
  case: string;
  impl: string;
  medianMs: number;
  units: number;
  unit: string;
}

export async function run(): Promise<string> {
  const rng = mulberry32(2024);
  const rows: Row[] = [];

  // Advantages: 1M rewards in groups of 8.
  const n = 1 << 20;
  const rewards = Array.from({ length: n }, () => Math.round(rng() * 8) / 4);
  assertClose(computeAdvantages(rewards, { groupSize: 8 }).advantages, naiveAdvantages(rewards, 8), 'advantages');
  const advCase = `computeAdvantages, ${si(n)} rewards, groupSize 8`;
  rows.push({ case: advCase, impl: 'webgrpo', ...measure(() => computeAdvantages(rewards, { groupSize: 8 })), units: n, unit: 'rewards' });
  rows.push({ case: advCase, impl: 'array of arrays (chunk, reduce, map)', ...measure(() => naiveAdvantages(rewards, 8)), units: n, unit: 'rewards' });

  // Loss + gradient: B = 64, T = 1024, off-policy, KL on, DAPO aggregation.
  const [b, t] = [64, 1024];
  const matrix = (f: () => number) => Array.from({ length: b }, () => Array.from({ length: t }, f));
  const logps = matrix(() => -rng() * 4);
  const input: LossInput = {
    logps,
    oldLogps: logps.map((row) => row.map((x) => x + (rng() - 0.5) * 0.6)),
    refLogps: logps.map((row) => row.map((x) => x + (rng() - 0.5) * 0.6)),
    advantages: Array.from({ length: b }, () => rng() * 2 - 1),
    mask: Array.from({ length: b }, () => {
      const length = 256 + Math.floor(rng() * (t - 256));
      return Array.from({ length: t }, (_, j) => (j < length ? 1 : 0));
    }),
  };
  const config: GrpoLossConfig = { lossType: 'dapo', epsilon: 0.2, epsilonHigh: 0.28, beta: 0.04 };
  const ours = grpoLoss(input, config);
  const theirs = tensorStyleLoss(input, 0.2, 0.28, 0.04);
  assertClose([ours.loss], [theirs.loss], 'loss');
  assertClose(ours.grad.flat(), theirs.grad.flat(), 'grad');
  const lossCase = `grpoLoss + grad, B=${b} T=${t}, beta 0.04`;
  rows.push({ case: lossCase, impl: 'webgrpo', ...measure(() => grpoLoss(input, config)), units: b * t, unit: 'tokens' });
  rows.push({ case: lossCase, impl: 'tensor-style nested arrays', ...measure(() => tensorStyleLoss(input, 0.2, 0.28, 0.04)), units: b * t, unit: 'tokens' });

  // Every loss type with every option on: sampling correction, off-policy mask, top-20% entropy
  // tokens, bias-corrected KL, entropy bonus. The alternative is the test suite's whole-tensor
  // transcription of TRL, which computes the loss only (no gradient).
  const full = {
    ...input,
    samplingLogps: input.oldLogps.map((row) => row.map((x) => x + (rng() - 0.5) * 0.02)),
    entropies: matrix(() => rng() * 3),
  };
  for (const lossType of LOSS_TYPES) {
    const typed: GrpoLossConfig = {
      lossType,
      importanceSamplingLevel: lossType === 'luspo' ? 'sequence' : 'token',
      epsilonHigh: lossType === 'cispo' ? 5 : 0.28,
      beta: 0.04,
      biasCorrectedKl: true,
      maxCompletionLength: t,
      importanceSampling: { mode: lossType === 'vespo' ? 'token_truncate' : 'sequence_mask' },
      offPolicyMaskThreshold: 0.5,
      topEntropyQuantile: 0.2,
      entropyCoef: 0.01,
    };
    assertClose([grpoLoss(full, typed).loss], [refGrpoLoss(full, typed as RefConfig).loss], `loss ${lossType}`);
    const typeCase = `grpoLoss + grad, ${lossType}, all options, B=${b} T=${t}`;
    rows.push({ case: typeCase, impl: 'webgrpo', ...measure(() => grpoLoss(full, typed)), units: b * t, unit: 'tokens' });
    rows.push({ case: typeCase, impl: 'TRL transcription, loss only', ...measure(() => refGrpoLoss(full, typed as RefConfig), { minTimeMs: 500 }), units: b * t, unit: 'tokens' });
  }

  // Log-probs and entropies: 512 positions over a 32k vocabulary, float32 logits.
  const [positions, v] = [512, 32768];
  const logits = Float32Array.from({ length: positions * v }, () => (rng() - 0.5) * 16);
  const ids = Int32Array.from({ length: positions }, () => Math.floor(rng() * v));
  const fast = tokenLogProbs({ logits, dims: [1, positions, v], ids, temperature: 0.7 });
  const slow = naiveLogProbs(logits, v, ids, 0.7);
  assertClose(fast.logps, slow.logps, 'logps');
  assertClose(fast.entropy, slow.entropy, 'entropy');
  const lpCase = `tokenLogProbs, ${positions} positions x V=${v}`;
  rows.push({ case: lpCase, impl: 'webgrpo', ...measure(() => tokenLogProbs({ logits, dims: [1, positions, v], ids, temperature: 0.7 })), units: positions, unit: 'tokens' });
  rows.push({ case: lpCase, impl: 'per-row copies (Array.from, map)', ...measure(() => naiveLogProbs(logits, v, ids, 0.7)), units: positions, unit: 'tokens' });

  const lines = [
    '## math',
    '',
    'Median of repeated calls after warm-up, single thread. Each pair was checked to agree (1e-9) before timing.',
    '',
    '| Case | Implementation | Median | Throughput | Speed-up |',
    '| --- | --- | ---: | ---: | ---: |',
  ];
  for (let i = 0; i < rows.length; i += 2) {
    const [mine, alt] = [rows[i], rows[i + 1]];
    for (const r of [mine, alt]) {
      const speedup = r === mine ? `${(alt.medianMs / mine.medianMs).toFixed(1)}x` : '1.0x';
      lines.push(`| ${r.case} | ${r.impl} | ${ms(r.medianMs)} ms | ${si((r.units / r.medianMs) * 1000)} ${r.unit}/s | ${speedup} |`);
    }
  }
  lines.push(
    '',
    'The webgrpo side also validates its input (shapes, finiteness, 0/1 mask) and, for advantages,',
    'handles missing rewards and reports group statistics; the alternatives do none of that.',
    '"All options": sampling correction (sequence_mask; token_truncate for vespo), off-policy mask,',
    'top-20% entropy tokens, bias-corrected KL and entropy bonus; the alternative is the test suite\'s',
    'whole-tensor transcription of TRL, which computes the loss only, without the gradient.',
  );
  return lines.join('\n');
}
