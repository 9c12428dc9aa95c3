import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/index.js';
import { computeAdvantages, mulberry32, type AdvantageOptions } from '../../lib/math.js';
import { refAdvantages, type RefAdvantageOptions } from './reference.js';

const close = (actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-12) => {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    if (Number.isNaN(expected[i])) expect(actual[i]).toBeNaN();
    else expect(Math.abs(actual[i] - expected[i])).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(expected[i])));
  }
};

function expectInvalid(fn: () => unknown, argument: string) {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).argument).toBe(argument);
    expect((error as InvalidInputError).code).toBe('InvalidInput');
    return;
  }
  throw new Error(`expected an InvalidInputError for ${argument}`);
}

describe('computeAdvantages by hand', () => {
  it('normalises each group by its mean and sample std + 1e-4', () => {
    const { advantages, rewards, groupMeans, groupStds, fracRewardZeroStd } = computeAdvantages([1, 0, 0, 1, 3, 1], {
      groupSize: 3,
    });
    // Group 1: mean 1/3, sample std sqrt(((2/3)^2 + 2 (1/3)^2) / 2) = sqrt(1/3).
    const s1 = Math.sqrt(1 / 3);
    // Group 2: mean 5/3, deviations -2/3, 4/3, -2/3: sample std sqrt((4/9 + 16/9 + 4/9) / 2) = sqrt(4/3).
    const s2 = Math.sqrt(4 / 3);
    close(advantages, [(2 / 3) / (s1 + 1e-4), (-1 / 3) / (s1 + 1e-4), (-1 / 3) / (s1 + 1e-4), (-2 / 3) / (s2 + 1e-4), (4 / 3) / (s2 + 1e-4), (-2 / 3) / (s2 + 1e-4)]);
    expect(rewards).toEqual([1, 0, 0, 1, 3, 1]);
    close(groupMeans, [1 / 3, 5 / 3]);
    close(groupStds, [s1, s2]);
    expect(fracRewardZeroStd).toBe(0);
  });

  it("'none' only centres, 'batch' divides by the std of the whole batch", () => {
    close(computeAdvantages([1, 0, 4, 2], { groupSize: 2, scaleRewards: 'none' }).advantages, [0.5, -0.5, 1, -1]);
    // TRL's legacy booleans: true is 'group', false is 'none'.
    expect(computeAdvantages([1, 0, 4, 2], { groupSize: 2, scaleRewards: false })).toEqual(computeAdvantages([1, 0, 4, 2], { groupSize: 2, scaleRewards: 'none' }));
    expect(computeAdvantages([1, 0, 4, 2], { groupSize: 2, scaleRewards: true })).toEqual(computeAdvantages([1, 0, 4, 2], { groupSize: 2 }));
    // Batch [1, 0, 4, 2]: mean 7/4, sample variance (0.5625 + 3.0625 + 5.0625 + 0.0625) / 3 = 2.9166...
    const s = Math.sqrt(8.75 / 3);
    close(computeAdvantages([1, 0, 4, 2], { groupSize: 2, scaleRewards: 'batch' }).advantages, [0.5 / (s + 1e-4), -0.5 / (s + 1e-4), 1 / (s + 1e-4), -1 / (s + 1e-4)]);
  });

  it('weights reward functions and skips missing ones; all-missing rows are unscorable', () => {
    const result = computeAdvantages(
      [
        [1, 0.5],
        [null, 2],
        [null, null],
        [0, NaN],
      ],
      { groupSize: 4, weights: [2, 1] },
    );
    expect(result.rewards).toEqual([2.5, 2, NaN, 0]);
    // Scorable rows 2.5, 2, 0: mean 1.5, sample std sqrt((1 + 0.25 + 2.25) / 2).
    const s = Math.sqrt(1.75);
    close(result.advantages, [1 / (s + 1e-4), 0.5 / (s + 1e-4), 0, -1.5 / (s + 1e-4)]);
    close(result.groupMeans, [1.5]);
  });

  it('rloo subtracts the mean of the other scorable rows', () => {
    const { advantages } = computeAdvantages([1, 2, null, 6, 5, 5], { groupSize: 3, estimator: 'rloo' });
    // Group 1: 1 - 2 = -1, 2 - 1 = 1, unscorable 0. Group 2: 6 - 5 = 1, 5 - 5.5 = -0.5 twice.
    close(advantages, [-1, 1, 0, 1, -0.5, -0.5]);
    // A group with a single scorable row has no baseline: 0, as TRL's nan_to_num gives.
    expect(computeAdvantages([3, null], { groupSize: 2, estimator: 'rloo' }).advantages).toEqual([0, 0]);
  });

  it('a single scorable row in a group gets 0 (its std is undefined)', () => {
    const { advantages, groupStds } = computeAdvantages([7, null, 1, 2], { groupSize: 2 });
    expect(advantages[0]).toBe(0);
    expect(advantages[1]).toBe(0);
    expect(groupStds[0]).toBeNaN();
  });
});

describe('computeAdvantages against the reference', () => {
  const rng = mulberry32(7);
  const table = (n: number, k: number, missing: number) =>
    Array.from({ length: n }, () =>
      Array.from({ length: k }, () => (rng() < missing ? null : Math.round(rng() * 40) / 8 - 1)),
    );
  const cases: RefAdvantageOptions[] = [];
  for (const scaleRewards of ['group', 'batch', 'none'] as const) cases.push({ groupSize: 4, scaleRewards });
  cases.push({ groupSize: 4, aggregation: 'normalize_then_sum', weights: [1, 0.5, 2] });
  cases.push({ groupSize: 4, estimator: 'rloo', weights: [0.3, 1, -1] });
  cases.push({ groupSize: 3, scaleRewards: 'batch', weights: [1, 2, 3] });

  for (const options of cases) {
    it(`matches ${JSON.stringify(options)}`, () => {
      for (let trial = 0; trial < 20; trial++) {
        const rewards = table(options.groupSize * 5, 3, trial % 2 ? 0.3 : 0.05);
        // Force one zero-std group and one fully unscorable row.
        for (let i = 0; i < options.groupSize; i++) rewards[i] = [1, 1, 1];
        rewards[options.groupSize + 1] = [null, null, null];
        const expected = refAdvantages(rewards, options);
        const actual = computeAdvantages(rewards, options as AdvantageOptions);
        close(actual.advantages, expected.advantages, 1e-12);
        close(actual.rewards, expected.rewards, 1e-12);
        expect(actual.fracRewardZeroStd).toBeCloseTo(expected.fracRewardZeroStd, 15);
      }
    });
  }
});

describe('computeAdvantages properties', () => {
  it('advantages of a full group sum to 0 and zero-std groups give zeros', () => {
    const rng = mulberry32(11);
    for (let trial = 0; trial < 50; trial++) {
      const groupSize = 2 + Math.floor(rng() * 7);
      const rewards = Array.from({ length: groupSize * 4 }, () => rng() * 10 - 5);
      rewards.fill(0.3, 0, groupSize);
      for (const scaleRewards of ['group', 'batch', 'none'] as const) {
        const { advantages, fracRewardZeroStd } = computeAdvantages(rewards, { groupSize, scaleRewards });
        for (let g = 0; g < 4; g++) {
          const sum = advantages.slice(g * groupSize, (g + 1) * groupSize).reduce((a, b) => a + b, 0);
          expect(Math.abs(sum)).toBeLessThan(1e-9);
        }
        for (let i = 0; i < groupSize; i++) expect(Math.abs(advantages[i])).toBeLessThan(1e-9);
        if (scaleRewards !== 'batch') expect(fracRewardZeroStd).toBe(0.25);
      }
      const rloo = computeAdvantages(rewards, { groupSize, estimator: 'rloo' }).advantages;
      expect(Math.abs(rloo.reduce((a, b) => a + b, 0))).toBeLessThan(1e-9);
    }
  });

  it('accepts typed arrays and gives the same numbers as plain arrays', () => {
    const plain = computeAdvantages([1, 2, 3, 5], { groupSize: 2 });
    const typed = computeAdvantages(new Float64Array([1, 2, 3, 5]), { groupSize: 2 });
    expect(typed).toEqual(plain);
  });
});

describe('computeAdvantages bad input', () => {
  it('names the argument at fault', () => {
    expectInvalid(() => computeAdvantages([1, 2, 3], { groupSize: 2 }), 'groupSize');
    expectInvalid(() => computeAdvantages([1, 2], { groupSize: 1 }), 'groupSize');
    expectInvalid(() => computeAdvantages([1, 2], { groupSize: 2.5 }), 'groupSize');
    expectInvalid(() => computeAdvantages([], { groupSize: 2 }), 'rewards');
    expectInvalid(() => computeAdvantages([[1, 2], [3]], { groupSize: 2 }), 'rewards');
    expectInvalid(() => computeAdvantages([1, [2]] as never, { groupSize: 2 }), 'rewards');
    expectInvalid(() => computeAdvantages([1, Infinity], { groupSize: 2 }), 'rewards');
    expectInvalid(() => computeAdvantages([1, '2'] as never, { groupSize: 2 }), 'rewards');
    expectInvalid(() => computeAdvantages([[1, 2], [3, 4]], { groupSize: 2, weights: [1] }), 'weights');
    expectInvalid(() => computeAdvantages([1, 2], { groupSize: 2, scaleRewards: 'global' as never }), 'scaleRewards');
    expectInvalid(() => computeAdvantages([1, 2], { groupSize: 2, aggregation: 'sum' as never }), 'aggregation');
    expectInvalid(() => computeAdvantages([1, 2], { groupSize: 2, estimator: 'ppo' as never }), 'estimator');
    expectInvalid(() => computeAdvantages([1, 2], { groupSize: 2, estimator: 'rloo', aggregation: 'normalize_then_sum' }), 'estimator');
  });
});
