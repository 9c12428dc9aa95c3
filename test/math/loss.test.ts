import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/index.js';
import { grpoLoss, mulberry32, type GrpoLossBatch, type GrpoLossConfig } from '../../lib/math.js';
import { refGrpoLoss as refLoss, type RefBatch as RefLossInput, type RefConfig } from './reference-loss.js';

function expectInvalid(fn: () => unknown, argument: string) {
  expect(fn).toThrow(InvalidInputError);
  try {
    fn();
  } catch (error) {
    expect((error as InvalidInputError).argument).toBe(argument);
  }
}

describe('grpoLoss by hand', () => {
  // On-policy (ratio 1): every active token's loss is -A.
  const batch: GrpoLossBatch = {
    logps: [
      [-1, -2, -3],
      [-0.5, -1.5, -2.5],
    ],
    advantages: [1, -0.5],
    mask: [
      [1, 1, 0],
      [1, 0, 0],
    ],
  };

  it('aggregates per loss type', () => {
    const grpo = grpoLoss(batch, { lossType: 'grpo' });
    // Rows: (-1 - 1) / 2 = -1 and 0.5 / 1; mean over rows -0.25.
    expect(grpo.loss).toBeCloseTo(-0.25, 15);
    expect(grpo.grad).toEqual([
      [-0.25, -0.25, 0],
      [0.25, 0, 0],
    ]);
    for (const lossType of ['bnpo', 'dapo'] as const) {
      const r = grpoLoss(batch, { lossType });
      expect(r.loss).toBeCloseTo(-1.5 / 3, 15);
      expect(r.grad[0][0]).toBeCloseTo(-1 / 3, 15);
      expect(r.grad[1][0]).toBeCloseTo(0.5 / 3, 15);
    }
    const dr = grpoLoss(batch, { lossType: 'dr_grpo', maxCompletionLength: 4 });
    expect(dr.loss).toBeCloseTo(-1.5 / 8, 15);
    expect(dr.grad[0][1]).toBeCloseTo(-1 / 8, 15);
    expect(dr.grad[1][0]).toBeCloseTo(0.5 / 8, 15);
    expect(grpoLoss(batch).loss).toBe(grpoLoss(batch, { lossType: 'dapo' }).loss);
  });

  it('clips the ratio and counts clipped tokens', () => {
    // Ratios e^0.3 = 1.35 (A > 0: clipped at 1.2), e^-0.3 = 0.74 (A < 0: clipped at 0.8), e^0.1 inside.
    const r = grpoLoss(
      { logps: [[0.3, -0.3, 0.1]], oldLogps: [[0, 0, 0]], advantages: [1], mask: [[1, 1, 1]] },
      { lossType: 'bnpo' },
    );
    // -min(w, clip(w)) per token with A = 1: -1.2, -e^-0.3, -e^0.1.
    expect(r.loss).toBeCloseTo((-1.2 - Math.exp(-0.3) - Math.exp(0.1)) / 3, 14);
    expect(r.grad[0][0]).toBe(0);
    expect(r.grad[0][1]).toBeCloseTo(-Math.exp(-0.3) / 3, 14);
    expect(r.metrics.clipRatioHigh).toBeCloseTo(1 / 3, 15);
    expect(r.metrics.clipRatioLow).toBe(0);
    const neg = grpoLoss({ logps: [[0.3, -0.3, 0.1]], oldLogps: [[0, 0, 0]], advantages: [-2], mask: [[1, 1, 1]] }, { lossType: 'bnpo' });
    // A = -2: -min(-2w, -2 clip(w)) = 2 max(w, clip(w)): 2e^0.3, 2 * 0.8, 2e^0.1.
    expect(neg.loss).toBeCloseTo((2 * Math.exp(0.3) + 1.6 + 2 * Math.exp(0.1)) / 3, 14);
    expect(neg.grad[0][1]).toBe(0);
    expect(neg.metrics.clipRatioLow).toBeCloseTo(1 / 3, 15);
    expect(neg.metrics.clipRatioRegion).toBeCloseTo(1 / 3, 15);
  });

  it('caps the ratio at delta (two-sided clipping)', () => {
    // w = e^1 > delta = 2 with A < 0: the loss is -(2 * -1) = 2 and the gradient is 0.
    const r = grpoLoss({ logps: [[1]], oldLogps: [[0]], advantages: [-1], mask: [[1]] }, { delta: 2 });
    expect(r.loss).toBe(2);
    expect(r.grad[0][0]).toBe(0);
    expect(grpoLoss({ logps: [[1]], oldLogps: [[0]], advantages: [-1], mask: [[1]] }).loss).toBeCloseTo(Math.E, 15);
  });

  it('adds beta times the k3 KL estimate', () => {
    const r = grpoLoss({ logps: [[-1]], refLogps: [[-1.5]], advantages: [0], mask: [[1]] }, { beta: 0.1 });
    const k3 = Math.exp(-0.5) + 0.5 - 1;
    expect(r.loss).toBeCloseTo(0.1 * k3, 15);
    expect(r.grad[0][0]).toBeCloseTo(0.1 * (1 - Math.exp(-0.5)), 15);
    expect(r.metrics.kl).toBeCloseTo(k3, 15);
    expect(grpoLoss({ logps: [[-1]], advantages: [0], mask: [[1]] }).metrics.kl).toBeUndefined();
  });

  it('subtracts the entropy bonus without adding to the gradient', () => {
    const base = { logps: [[-1, -1]], advantages: [1], mask: [[1, 0]], entropies: [[2, 100]] };
    const r = grpoLoss(base, { entropyCoef: 0.01 });
    expect(r.loss).toBeCloseTo(-1 - 0.01 * 2, 15);
    expect(r.metrics.entropy).toBe(2);
    expect(r.grad).toEqual(grpoLoss(base).grad);
  });

  it('uses one ratio per sequence at sequence level (GSPO)', () => {
    // Row log-ratios 0.3 and 0.1 (third token masked): mean 0.2, w = e^0.2 = 1.2214 > 1.2.
    const r = grpoLoss(
      { logps: [[0.3, 0.1, 9]], oldLogps: [[0, 0, 0]], advantages: [1], mask: [[1, 1, 0]] },
      { importanceSamplingLevel: 'sequence', epsilonHigh: 0.3 },
    );
    expect(r.loss).toBeCloseTo(-Math.exp(0.2), 14);
    // Both active tokens carry -exp(mean); moving one logp moves the mean by 1/2, so the summed
    // loss moves by 2 * -exp(0.2) / 2, divided by the 2 active tokens (dapo).
    expect(r.grad[0][0]).toBeCloseTo(-Math.exp(0.2) / 2, 14);
    expect(r.grad[0][2]).toBe(0);
  });

  it('counts an all-masked batch as zero loss', () => {
    const r = grpoLoss({ logps: [[-1, -2]], advantages: [1], mask: [[0, 0]] }, { lossType: 'grpo' });
    expect(r.loss).toBe(0);
    expect(r.metrics.clipRatioRegion).toBe(0);
  });
});

/** Random off-policy batches whose ratios keep clear of the clip bounds, so differences are smooth. */
function randomBatch(seed: number, config: GrpoLossConfig, b = 4, t = 6): RefLossInput {
  const rng = mulberry32(seed);
  const bounds = [1 - (config.epsilon ?? 0.2), 1 + (config.epsilonHigh ?? config.epsilon ?? 0.2), config.delta ?? Infinity];
  const clear = (logRatio: number) => bounds.every((x) => Math.abs(Math.exp(logRatio) - x) > 2e-3);
  const logps: number[][] = [];
  const oldLogps: number[][] = [];
  const mask: number[][] = [];
  for (let i = 0; i < b; i++) {
    for (;;) {
      const lp = Array.from({ length: t }, () => -0.1 - rng() * 4);
      // A per-row shift keeps sequence-level (mean) ratios spread across the clip bounds too.
      const shift = (rng() - 0.5) * 1.2;
      const ratio = Array.from({ length: t }, () => shift + (rng() - 0.5) * 0.8);
      const m = Array.from({ length: t }, (_, j) => (j < 1 + Math.floor(rng() * t) ? 1 : 0));
      if (i === b - 1) m.fill(0); // one all-padding row
      const active = ratio.filter((_, j) => m[j]);
      const mean = active.reduce((a, x) => a + x, 0) / Math.max(active.length, 1);
      if (config.importanceSamplingLevel === 'sequence' ? !clear(mean) : !active.every(clear)) continue;
      logps.push(lp);
      oldLogps.push(lp.map((x, j) => x - ratio[j]));
      mask.push(m);
      break;
    }
  }
  return {
    logps,
    oldLogps,
    refLogps: logps.map((row) => row.map((x) => x + (rng() - 0.5))),
    advantages: Array.from({ length: b }, (_, i) => (i % 2 ? -1 : 1) * (0.2 + rng())),
    mask,
    entropies: logps.map((row) => row.map(() => rng() * 3)),
  };
}

describe('grpoLoss against the reference and finite differences', () => {
  const configs: GrpoLossConfig[] = [];
  for (const lossType of ['grpo', 'bnpo', 'dr_grpo', 'dapo'] as const) {
    for (const importanceSamplingLevel of ['token', 'sequence'] as const) {
      for (const beta of [0, 0.04]) {
        for (const delta of [undefined, 1.3]) {
          configs.push({ lossType, importanceSamplingLevel, beta, delta, maxCompletionLength: 8, epsilonHigh: 0.28, entropyCoef: beta ? 0.01 : 0 });
        }
      }
    }
  }

  for (const [n, config] of configs.entries()) {
    it(`${config.lossType} ${config.importanceSamplingLevel} beta=${config.beta} delta=${config.delta}`, () => {
      let clipped = 0;
      for (let trial = 0; trial < 3; trial++) {
        const x = randomBatch(1000 * n + trial, config);
        const ref = refLoss(x, config as RefConfig);
        const got = grpoLoss(x, config);
        expect(Math.abs(got.loss - ref.loss)).toBeLessThan(1e-13);
        expect(got.metrics.clipRatioLow).toBeCloseTo(ref.metrics.clipRatioLow as number, 14);
        expect(got.metrics.clipRatioHigh).toBeCloseTo(ref.metrics.clipRatioHigh as number, 14);
        expect(got.metrics.clipRatioRegion).toBeCloseTo(ref.metrics.clipRatioRegion as number, 14);
        if (config.beta) expect(got.metrics.kl).toBeCloseTo(ref.metrics.kl as number, 14);
        clipped += got.metrics.clipRatioRegion!;

        // Central differences of the reference loss in every logp (masked ones must come out 0).
        const h = 1e-6;
        for (let i = 0; i < x.logps.length; i++) {
          for (let t = 0; t < x.logps[0].length; t++) {
            const shifted = (d: number) => {
              const logps = x.logps.map((row) => row.slice());
              logps[i][t] += d;
              return refLoss({ ...x, logps, detachedLogps: x.logps }, config as RefConfig).loss;
            };
            const numeric = (shifted(h) - shifted(-h)) / (2 * h);
            expect(Math.abs(got.grad[i][t] - numeric)).toBeLessThan(1e-8);
            if (!x.mask[i][t]) expect(got.grad[i][t]).toBe(0);
          }
        }
      }
      // The batches must exercise the clipped branches, not only the smooth middle.
      expect(clipped).toBeGreaterThan(0);
    });
  }

  it('on-policy gradients are -A times the token weight (ties split like autograd)', () => {
    const x = randomBatch(5, {});
    const got = grpoLoss({ ...x, oldLogps: undefined }, { lossType: 'bnpo' });
    const active = x.mask.flat().reduce((a, b) => a + b, 0);
    for (let i = 0; i < x.logps.length; i++) {
      for (let t = 0; t < x.logps[0].length; t++) {
        expect(got.grad[i][t]).toBeCloseTo(x.mask[i][t] ? -x.advantages[i] / active : 0, 15);
      }
    }
  });

  it('accepts typed-array rows and boolean masks', () => {
    const x = randomBatch(9, {});
    const typed = grpoLoss({
      logps: x.logps.map((r) => Float64Array.from(r)),
      oldLogps: x.oldLogps!.map((r) => Float64Array.from(r)),
      advantages: Float64Array.from(x.advantages),
      mask: x.mask.map((r) => r.map(Boolean)),
    });
    const plain = grpoLoss({ logps: x.logps, oldLogps: x.oldLogps, advantages: x.advantages, mask: x.mask });
    expect(typed.loss).toBe(plain.loss);
    expect(typed.grad).toEqual(plain.grad);
  });
});

describe('grpoLoss bad input', () => {
  const ok = () => ({ logps: [[-1, -2]], advantages: [1], mask: [[1, 1]] }) as GrpoLossBatch;
  it('names the argument at fault', () => {
    expectInvalid(() => grpoLoss({ ...ok(), logps: [[-1, NaN]] }), 'logps');
    expectInvalid(() => grpoLoss({ ...ok(), logps: [] }), 'logps');
    expectInvalid(() => grpoLoss({ ...ok(), logps: [[-1, -2], [-1]], advantages: [1, 1], mask: [[1, 1], [1]] }), 'logps');
    expectInvalid(() => grpoLoss({ ...ok(), mask: [[1, 1, 1]] }), 'mask');
    expectInvalid(() => grpoLoss({ ...ok(), mask: [[1, 0.5]] }), 'mask');
    expectInvalid(() => grpoLoss({ ...ok(), mask: [[1, 1], [1, 1]] }), 'mask');
    expectInvalid(() => grpoLoss({ ...ok(), oldLogps: [[-1]] }), 'oldLogps');
    expectInvalid(() => grpoLoss({ ...ok(), oldLogps: [[-1, Infinity]] }), 'oldLogps');
    expectInvalid(() => grpoLoss({ ...ok(), advantages: [1, 2] }), 'advantages');
    expectInvalid(() => grpoLoss({ ...ok(), advantages: [NaN] }), 'advantages');
    expectInvalid(() => grpoLoss(ok(), { beta: 0.1 }), 'refLogps');
    expectInvalid(() => grpoLoss({ ...ok(), refLogps: [[1, 2, 3]] }, { beta: 0.1 }), 'refLogps');
    expectInvalid(() => grpoLoss(ok(), { entropyCoef: 0.1 }), 'entropies');
    expectInvalid(() => grpoLoss(ok(), { lossType: 'dr_grpo' }), 'maxCompletionLength');
    expectInvalid(() => grpoLoss(ok(), { lossType: 'dr_grpo', maxCompletionLength: 0 }), 'maxCompletionLength');
    expectInvalid(() => grpoLoss(ok(), { lossType: 'ppo' as never }), 'lossType');
    expectInvalid(() => grpoLoss(ok(), { epsilon: -0.1 }), 'epsilon');
    expectInvalid(() => grpoLoss(ok(), { delta: 0 }), 'delta');
    expectInvalid(() => grpoLoss(ok(), { importanceSamplingLevel: 'row' as never }), 'importanceSamplingLevel');
  });
});
