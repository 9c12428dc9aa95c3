import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/index.js';
import { grpoLoss, mulberry32, type GrpoLossBatch, type GrpoLossConfig, type Rng } from '../../lib/math.js';
import { refGrpoLoss, type RefBatch, type RefConfig } from './reference-loss.js';

const CLIPPED = ['grpo', 'bnpo', 'dr_grpo', 'dapo', 'luspo'];
const near = (got: number, want: number, tol: number) => Math.abs(got - want) <= tol * (1 + Math.abs(want));

/**
 * A random batch with both advantage signs, one all-padding row and a sampling distribution that
 * differs from the old policy. For the clipped types the ratios keep clear of the clip bounds
 * (and delta), so the finite differences below never straddle a kink.
 */
function randomBatch(rng: Rng, config: GrpoLossConfig, b = 4, t = 6): RefBatch {
  const eps = config.epsilon ?? 0.2;
  const bounds = CLIPPED.includes(config.lossType ?? 'dapo') ? [1 - eps, 1 + (config.epsilonHigh ?? eps), config.delta ?? Infinity] : [];
  const clear = (logRatio: number) => bounds.every((x) => Math.abs(Math.exp(logRatio) - x) > 2e-3);
  const logps: number[][] = [];
  const oldLogps: number[][] = [];
  const mask: number[][] = [];
  for (let i = 0; i < b; i++) {
    for (;;) {
      const lp = Array.from({ length: t }, () => -0.1 - rng() * 4);
      const shift = (rng() - 0.5) * 1.2;
      const ratio = Array.from({ length: t }, () => shift + (rng() - 0.5) * 0.8);
      const m = Array.from({ length: t }, (_, j) => (j < 1 + Math.floor(rng() * t) ? 1 : 0));
      if (i === b - 1) m.fill(0);
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
    samplingLogps: oldLogps.map((row) => row.map((x) => x + (rng() - 0.5) * 0.6)),
    advantages: Array.from({ length: b }, (_, i) => (i % 2 ? -1 : 1) * (0.2 + rng())),
    mask,
    entropies: logps.map((row) => row.map(() => rng() * 3)),
  };
}

/** Checks loss, metrics and grad (central differences of the reference in every logp). */
function checkAgainstReference(x: RefBatch, config: GrpoLossConfig) {
  const ref = refGrpoLoss(x, config as RefConfig);
  const got = grpoLoss(x as GrpoLossBatch, config);
  expect(near(got.loss, ref.loss, 1e-12), `loss ${got.loss} vs ${ref.loss}`).toBe(true);
  for (const [key, want] of Object.entries(ref.metrics)) {
    const have = (got.metrics as Record<string, unknown>)[key];
    if (typeof want === 'number') {
      if (Number.isNaN(want)) expect(have, key).toBeNaN();
      else expect(near(have as number, want, 1e-12), `${key} ${String(have)} vs ${want}`).toBe(true);
    } else {
      for (const [sub, v] of Object.entries(want as Record<string, number>)) {
        expect(near((have as Record<string, number>)[sub], v, 1e-12), `${key}.${sub}`).toBe(true);
      }
    }
  }
  for (const key of ['clipRatioLow', 'cispoClipRatio', 'vespoPhiMean', 'importanceSamplingRatio', 'kl', 'policyLoss'] as const) {
    expect(got.metrics[key] === undefined, key).toBe(!(key in ref.metrics));
  }
  const h = 1e-6;
  for (let i = 0; i < x.logps.length; i++) {
    for (let t = 0; t < x.logps[0].length; t++) {
      const shifted = (d: number) => {
        const logps = x.logps.map((row) => row.slice());
        logps[i][t] += d;
        return refGrpoLoss({ ...x, logps, detachedLogps: x.logps }, config as RefConfig).loss;
      };
      const numeric = (shifted(h) - shifted(-h)) / (2 * h);
      expect(Math.abs(got.grad[i][t] - numeric), `grad[${i}][${t}] ${got.grad[i][t]} vs ${numeric}`).toBeLessThan(1e-7 * (1 + Math.abs(numeric)));
    }
  }
  if (config.entropyCoef && (config.topEntropyQuantile ?? 1) === 1) {
    // Without the quantile cut the bonus is linear in the entropies.
    const i = 0;
    const t = 0;
    const bumped = x.entropies!.map((row) => row.slice());
    bumped[i][t] += 1e-3;
    const slope = (refGrpoLoss({ ...x, entropies: bumped }, config as RefConfig).loss - ref.loss) / 1e-3;
    expect(Math.abs(got.entropyGrad![i][t] - slope)).toBeLessThan(1e-9);
  }
  return got;
}

const IS_MODES = [undefined, 'token_truncate', 'token_mask', 'sequence_truncate', 'sequence_mask'] as const;

function gridConfigs(): GrpoLossConfig[] {
  const rng = mulberry32(14);
  const out: GrpoLossConfig[] = [];
  for (const lossType of ['grpo', 'bnpo', 'dr_grpo', 'dapo', 'cispo', 'sapo', 'luspo', 'vespo'] as const) {
    for (const importanceSamplingLevel of ['token', 'sequence'] as const) {
      if (lossType === 'luspo' && importanceSamplingLevel === 'token') continue;
      for (const [beta, biasCorrectedKl] of [[0, false], [0.04, false], [0.04, true]] as const) {
        for (const mode of IS_MODES) {
          if (lossType === 'vespo' && mode?.startsWith('sequence')) continue;
          // The other options vary with the seed, so each meets every type in some combination.
          const config: GrpoLossConfig = {
            lossType,
            importanceSamplingLevel,
            beta,
            biasCorrectedKl,
            maxCompletionLength: 8,
            epsilonHigh: lossType === 'cispo' ? 1.1 : 0.28,
            entropyCoef: rng() < 0.5 ? 0.01 : 0,
            sapoTemperaturePos: 1 + rng(),
            sapoTemperatureNeg: 1.05 + rng(),
          };
          if (mode) config.importanceSampling = { mode, clipMax: rng() < 0.7 ? 1.3 : null, clipMin: rng() < 0.5 ? 0.8 : null };
          if (mode?.endsWith('truncate') && config.importanceSampling!.clipMax === null) config.importanceSampling!.clipMin = 0.8;
          if (rng() < 0.5) config.offPolicyMaskThreshold = 0.05;
          if (rng() < 0.5) config.topEntropyQuantile = rng() < 0.5 ? 0.5 : 0.2;
          if (CLIPPED.includes(lossType) && rng() < 0.3) config.delta = 1.3;
          out.push(config);
        }
      }
    }
  }
  return out;
}

describe('grpoLoss, every loss type and option, against the TRL transcription', () => {
  const configs = gridConfigs();
  it('covers every type, mode and option', () => {
    expect(new Set(configs.map((c) => c.lossType)).size).toBe(8);
    expect(configs.filter((c) => c.topEntropyQuantile && c.offPolicyMaskThreshold && c.importanceSampling && c.beta).length).toBeGreaterThan(10);
  });
  for (const [n, config] of configs.entries()) {
    const name = `${config.lossType} ${config.importanceSamplingLevel} beta=${config.beta}${config.biasCorrectedKl ? ' bc' : ''} is=${config.importanceSampling?.mode ?? '-'} opm=${config.offPolicyMaskThreshold ?? '-'} q=${config.topEntropyQuantile ?? 1} ent=${config.entropyCoef} delta=${config.delta ?? '-'}`;
    it(name, () => {
      const rng = mulberry32(7000 + n);
      for (let trial = 0; trial < 2; trial++) {
        const x = randomBatch(rng, config);
        if (trial === 1) x.numItemsInBatch = 17;
        checkAgainstReference(x, config);
      }
    });
  }

  it('random configs and batches (property)', () => {
    const config = fc.record(
      {
        lossType: fc.constantFrom('grpo', 'bnpo', 'dr_grpo', 'dapo', 'cispo', 'sapo', 'luspo', 'vespo' as const),
        importanceSamplingLevel: fc.constantFrom('token', 'sequence' as const),
        beta: fc.constantFrom(0, 0.1),
        biasCorrectedKl: fc.boolean(),
        mode: fc.constantFrom(...IS_MODES),
        clipMax: fc.double({ min: 0.5, max: 4, noNaN: true }),
        threshold: fc.option(fc.double({ min: -0.5, max: 0.5, noNaN: true })),
        quantile: fc.option(fc.double({ min: 0.05, max: 1, noNaN: true })),
        entropyCoef: fc.constantFrom(0, 0.02),
        onPolicy: fc.boolean(),
        kPos: fc.double({ min: 0.5, max: 4, noNaN: true }),
        lambdaNeg: fc.double({ min: 0.5, max: 4, noNaN: true }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(config, fc.integer({ min: 0, max: 2 ** 31 }), (c, seed) => {
        const lossType = c.lossType ?? 'dapo';
        const cfg: GrpoLossConfig = {
          lossType,
          importanceSamplingLevel: lossType === 'luspo' ? 'sequence' : (c.importanceSamplingLevel ?? 'token'),
          beta: c.beta ?? 0,
          biasCorrectedKl: c.biasCorrectedKl ?? false,
          maxCompletionLength: 6,
          entropyCoef: c.entropyCoef ?? 0,
          vespoKPos: c.kPos ?? 2,
          vespoLambdaNeg: c.lambdaNeg ?? 2,
          ...(lossType === 'cispo' ? { epsilonHigh: 1.2 } : {}),
        };
        const mode = lossType === 'vespo' && c.mode?.startsWith('sequence') ? 'token_mask' : c.mode;
        if (mode) cfg.importanceSampling = { mode, clipMax: c.clipMax ?? 3 };
        if (c.threshold !== undefined && c.threshold !== null) cfg.offPolicyMaskThreshold = c.threshold;
        if (c.quantile !== undefined && c.quantile !== null) cfg.topEntropyQuantile = c.quantile;
        const x = randomBatch(mulberry32(seed), cfg, 3, 5);
        // Without oldLogps the ratio is logps over their detached copy: 1, with gradient.
        if (c.onPolicy) delete x.oldLogps;
        checkAgainstReference(x, cfg);
      }),
      { numRuns: 150 },
    );
  });
});

describe('grpoLoss new types by hand', () => {
  const one = (lp: number, old: number, a: number) => ({ logps: [[lp]], oldLogps: [[old]], advantages: [a], mask: [[1]] });

  it('cispo caps the detached ratio at epsilonHigh and differentiates logp alone', () => {
    const r = grpoLoss(one(-1, -1.5, 2), { lossType: 'cispo', epsilonHigh: 1.2 });
    expect(r.loss).toBeCloseTo(-1.2 * 2 * -1, 15);
    expect(r.grad[0][0]).toBeCloseTo(-1.2 * 2, 15);
    expect(r.metrics.cispoClipRatio).toBe(1);
    expect(r.metrics.clipRatioLow).toBeUndefined();
  });

  it('sapo at ratio 1 gives -2 A / tau ... times the sigmoid(0) = 1/2', () => {
    const r = grpoLoss(one(-1, -1, 3), { lossType: 'sapo' });
    expect(r.loss).toBeCloseTo(-(0.5 * 4) * 3, 14);
    // d/dlogW = -A 4 sigma (1 - sigma) w = -3
    expect(r.grad[0][0]).toBeCloseTo(-3, 14);
    const neg = grpoLoss(one(-1, -1, -3), { lossType: 'sapo' });
    expect(neg.loss).toBeCloseTo(((0.5 * 4) / 1.05) * 3, 14);
  });

  it('vespo weighs an on-policy row by phi(1) = 1', () => {
    const r = grpoLoss({ logps: [[-1, -2]], advantages: [0.5], mask: [[1, 1]] }, { lossType: 'vespo' });
    expect(r.metrics.vespoPhiMean).toBeCloseTo(1, 15);
    expect(r.loss).toBeCloseTo((-0.5 * -1 + -0.5 * -2) / 2, 15);
    // Off policy, phi(W) = exp(lambda + k log W - lambda W) with W = exp(sum of log-ratios).
    const off = grpoLoss({ logps: [[-1, -2]], oldLogps: [[-1.1, -2.2]], advantages: [0.5], mask: [[1, 1]] }, { lossType: 'vespo' });
    const W = Math.exp(0.3);
    expect(off.metrics.vespoPhiMean).toBeCloseTo(Math.exp(3 + 2 * Math.log(W) - 3 * W), 14);
  });

  it('luspo scales each row by its length', () => {
    const x = { logps: [[-1, -1, -1], [-1, 0, 0]], advantages: [1, -1], mask: [[1, 1, 1], [1, 0, 0]] };
    const r = grpoLoss(x, { lossType: 'luspo', importanceSamplingLevel: 'sequence' });
    expect(r.loss).toBeCloseTo((-1 * 3 + 1 * 1) / 2, 15);
    // A per-token factor (here the KL term) broadcasts the row's term over its tokens; padding stays out.
    const withKl = grpoLoss({ ...x, refLogps: x.logps.map((row) => row.map((v) => v + 0.5)) }, { lossType: 'luspo', importanceSamplingLevel: 'sequence', beta: 0.1 });
    // With a per-token KL, TRL's (per_token_loss * lengths).mean() runs over all of (B, T), padding
    // included: every position of row b weighs length_b / (B T).
    const k3 = Math.exp(0.5) - 0.5 - 1;
    expect(withKl.loss).toBeCloseTo((3 * (-1 + 0.1 * k3) * 3 + 3 * (1 + 0.1 * k3) * 1) / 6, 15);
    expect(withKl.grad[1][1]).toBeCloseTo((0.1 * (1 - Math.exp(0.5)) * 1) / 6, 15);
  });

  it('sequence_mask drops rows whose summed ratio exceeds clipMax; token_truncate caps tokens', () => {
    const x = {
      logps: [[-1, -1], [-1, -1]],
      samplingLogps: [[-1.6, -1.6], [-1, -1.1]],
      advantages: [1, 1],
      mask: [[1, 1], [1, 1]],
    };
    const seq = grpoLoss(x, { importanceSampling: { mode: 'sequence_mask' } });
    expect(seq.metrics.importanceSamplingRatio!.min).toBe(0); // exp(1.2) > 3
    expect(seq.metrics.importanceSamplingRatio!.max).toBeCloseTo(Math.exp(0.1), 15);
    expect(seq.loss).toBeCloseTo((-2 * Math.exp(0.1)) / 4, 15);
    const tok = grpoLoss(x, { importanceSampling: { mode: 'token_truncate', clipMax: 1.5 } });
    expect(tok.metrics.importanceSamplingRatio!.max).toBe(1.5);
    expect(tok.loss).toBeCloseTo(-(1.5 + 1.5 + 1 + Math.exp(0.1)) / 4, 15);
    expect(tok.metrics.samplingLogpDifference!.max).toBeCloseTo(0.6, 15);
  });

  it('keeps only high-entropy tokens (torch.quantile in float32) and the bonus follows them', () => {
    const x = { logps: [[-1, -1, -1, -1, -1]], advantages: [1], mask: [[1, 1, 1, 1, 1]], entropies: [[0.1, 0.2, 0.3, 0.4, 0.5]] };
    // quantile(., 0.5) = float32(0.3) > 0.3, so 0.3 itself is below the cut: two tokens are kept.
    expect(Math.fround(0.3)).toBeGreaterThan(0.3);
    const r = grpoLoss(x, { topEntropyQuantile: 0.5, entropyCoef: 0.1 });
    expect(r.grad[0]).toEqual([0, 0, 0, -0.2, -0.2]);
    expect(r.metrics.trainedEntropy).toBeCloseTo(0.45, 15);
    // dapo (the default), like cispo and vespo, divides the kept tokens' entropy sum by its global
    // token count (num_items_in_batch, here the 5 active tokens), not by the 2 tokens kept.
    expect(r.loss).toBeCloseTo(-2 / 5 - (0.1 * 0.9) / 5, 15);
    expect(r.entropyGrad![0]).toEqual([0, 0, 0, -0.02, -0.02]);
    const explicit = grpoLoss({ ...x, numItemsInBatch: 9 }, { topEntropyQuantile: 0.5, entropyCoef: 0.1 });
    expect(explicit.entropyGrad![0][4]).toBeCloseTo(-0.1 / 9, 15);
    // The other types take the mean over the kept tokens.
    const bnpo = grpoLoss(x, { lossType: 'bnpo', topEntropyQuantile: 0.5, entropyCoef: 0.1 });
    expect(bnpo.loss).toBeCloseTo(-2 / 5 - (0.1 * 0.9) / 2, 15);
    expect(bnpo.entropyGrad![0]).toEqual([0, 0, 0, -0.05, -0.05]);
  });

  it('off-policy masking drops negative-advantage rows far from the sampler', () => {
    const x = { logps: [[-2, -2], [-2, -2]], samplingLogps: [[-1, -1], [-1, -1]], advantages: [1, -1], mask: [[1, 1], [1, 1]] };
    const r = grpoLoss(x, { offPolicyMaskThreshold: 0.5, lossType: 'bnpo' });
    expect(r.grad[1]).toEqual([0, 0]);
    expect(r.loss).toBeCloseTo(-0.5, 15);
    expect(grpoLoss(x, { offPolicyMaskThreshold: 1, lossType: 'bnpo' }).loss).toBeCloseTo(0, 15);
  });

  it('numItemsInBatch replaces the token count of dapo-style types only', () => {
    const x = { logps: [[-1, -1]], advantages: [1], mask: [[1, 1]], numItemsInBatch: 8 };
    expect(grpoLoss(x, { lossType: 'dapo' }).loss).toBeCloseTo(-2 / 8, 15);
    expect(grpoLoss(x, { lossType: 'bnpo' }).loss).toBeCloseTo(-1, 15);
  });

  it('bias-corrected KL multiplies the KL by the ratio (and reports it)', () => {
    const x = { logps: [[-1]], oldLogps: [[-1.2]], refLogps: [[-1.5]], advantages: [0], mask: [[1]] };
    const k3 = Math.exp(-0.5) + 0.5 - 1;
    expect(grpoLoss(x, { beta: 0.1, biasCorrectedKl: true }).metrics.kl).toBeCloseTo(k3 * Math.exp(0.2), 15);
    expect(grpoLoss(x, { beta: 0.1 }).metrics.kl).toBeCloseTo(k3, 15);
  });
});

describe('grpoLoss properties', () => {
  const batchArb = fc.integer({ min: 0, max: 2 ** 31 }).map((seed) => randomBatch(mulberry32(seed), {}));

  it('an importance ratio of 1 changes nothing (every mode whose bounds admit 1)', () => {
    fc.assert(
      fc.property(batchArb, fc.constantFrom('token_truncate', 'token_mask', 'sequence_truncate', 'sequence_mask' as const), fc.constantFrom('grpo', 'dapo', 'cispo', 'sapo' as const), (x, mode, lossType) => {
        const same = { ...x, samplingLogps: x.oldLogps } as GrpoLossBatch;
        const plain = grpoLoss(same, { lossType, epsilonHigh: 1.2 });
        const corrected = grpoLoss(same, { lossType, epsilonHigh: 1.2, importanceSampling: { mode, clipMax: 2, clipMin: 0.5 } });
        expect(corrected.loss).toBeCloseTo(plain.loss, 14);
        expect(corrected.metrics.importanceSamplingRatio).toEqual({ min: 1, mean: 1, max: 1 });
      }),
    );
  });

  it('a smaller topEntropyQuantile trains on a subset of the tokens', () => {
    fc.assert(
      fc.property(batchArb, fc.double({ min: 0.05, max: 1, noNaN: true }), fc.double({ min: 0.05, max: 1, noNaN: true }), (x, p, q) => {
        const [lo, hi] = p < q ? [p, q] : [q, p];
        const kept = (quantile: number) => grpoLoss(x as GrpoLossBatch, { lossType: 'bnpo', topEntropyQuantile: quantile }).grad.flat().map((g) => g !== 0);
        const small = kept(lo);
        const large = kept(hi);
        small.forEach((k, i) => k && expect(large[i]).toBe(true));
      }),
    );
  });

  it('grad is 0 at masked positions (luspo: unless TRL averages over padding too)', () => {
    fc.assert(
      fc.property(batchArb, fc.constantFrom('grpo', 'bnpo', 'dr_grpo', 'dapo', 'cispo', 'sapo', 'luspo', 'vespo' as const), fc.boolean(), (x, lossType, seq) => {
        // luspo's mean covers padding once a per-token factor (here the KL) gives its loss a token axis.
        const beta = lossType === 'luspo' ? 0 : 0.1;
        const r = grpoLoss(x as GrpoLossBatch, { lossType, importanceSamplingLevel: seq || lossType === 'luspo' ? 'sequence' : 'token', beta, biasCorrectedKl: true, maxCompletionLength: 6 });
        x.mask.forEach((row, i) => row.forEach((m, j) => m || expect(r.grad[i][j]).toBe(0)));
      }),
    );
  });
});

describe('grpoLoss new options, bad input', () => {
  const ok = () => ({ logps: [[-1, -2]], advantages: [1], mask: [[1, 1]] }) as GrpoLossBatch;
  const expectInvalid = (f: () => unknown, argument: string) => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidInputError);
      expect((e as InvalidInputError).argument).toBe(argument);
      return;
    }
    throw new Error(`expected an InvalidInputError about ${argument}`);
  };
  it('names the argument at fault', () => {
    expectInvalid(() => grpoLoss(ok(), { lossType: 'luspo' }), 'importanceSamplingLevel');
    expectInvalid(() => grpoLoss(ok(), { lossType: 'vespo', importanceSampling: { mode: 'sequence_mask' } }), 'importanceSampling.mode');
    expectInvalid(() => grpoLoss(ok(), { importanceSampling: { mode: 'sequence_mask' } }), 'samplingLogps');
    expectInvalid(() => grpoLoss(ok(), { importanceSampling: { mode: 'token' as never } }), 'importanceSampling.mode');
    expectInvalid(() => grpoLoss(ok(), { importanceSampling: { mode: 'token_truncate', clipMax: null } }), 'importanceSampling');
    expectInvalid(() => grpoLoss(ok(), { importanceSampling: { mode: 'token_mask', clipMax: 1, clipMin: 2 } }), 'importanceSampling.clipMin');
    expectInvalid(() => grpoLoss(ok(), { importanceSampling: { mode: 'token_mask', clipMax: -1 } }), 'importanceSampling.clipMax');
    expectInvalid(() => grpoLoss(ok(), { importanceSampling: 'sequence_mask' as never }), 'importanceSampling');
    expectInvalid(() => grpoLoss({ ...ok(), samplingLogps: [[-1]] }, { importanceSampling: { mode: 'token_mask' } }), 'samplingLogps');
    expectInvalid(() => grpoLoss({ ...ok(), samplingLogps: [[-1, NaN]] }, { importanceSampling: { mode: 'token_mask' } }), 'samplingLogps');
    expectInvalid(() => grpoLoss(ok(), { topEntropyQuantile: 0 }), 'topEntropyQuantile');
    expectInvalid(() => grpoLoss(ok(), { topEntropyQuantile: 1.5 }), 'topEntropyQuantile');
    expectInvalid(() => grpoLoss(ok(), { topEntropyQuantile: 0.5 }), 'entropies');
    expectInvalid(() => grpoLoss(ok(), { offPolicyMaskThreshold: NaN }), 'offPolicyMaskThreshold');
    expectInvalid(() => grpoLoss(ok(), { sapoTemperaturePos: 0 }), 'sapoTemperaturePos');
    expectInvalid(() => grpoLoss(ok(), { vespoKNeg: Infinity }), 'vespoKNeg');
    expectInvalid(() => grpoLoss(ok(), { biasCorrectedKl: 1 as never }), 'biasCorrectedKl');
    expectInvalid(() => grpoLoss({ ...ok(), numItemsInBatch: -1 }), 'numItemsInBatch');
  });
});
