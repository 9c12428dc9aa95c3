/** The per-token views (site/lib/token-views.ts): entropy, ratio and gradient share of each token. */
import { describe, expect, it } from 'vitest';
import type { RolloutRecord } from '../../lib/index.js';
import { pieceValues, scoredViews, viewShade, VIEW_LEGEND } from '../../site/lib/token-views.js';

const rollout = (logprobs: number[], advantage: number): RolloutRecord => ({
  text: 'x'.repeat(logprobs.length),
  tokenIds: logprobs.map((_, i) => i + 1),
  logprobs,
  finishReason: 'eos',
  rewards: [advantage],
  reward: advantage,
  advantage,
});

describe('scoredViews', () => {
  it('gives ratios of the model now to the sampler, its entropies, and each token\'s share of |d loss / d log p|', () => {
    const rollouts = [rollout([-1, -2, -0.5], 1), rollout([-0.3, -0.7], -0.5)];
    const now = { logprobs: [[-1, -2 + Math.log(2), -0.5], [-0.3, -0.7 - Math.log(4)]], entropies: [[1, 2, 3], [0.5, 0.25]] };
    const views = scoredViews(rollouts, now);
    expect(views.entropy).toEqual(now.entropies);
    views.ratio.flat().forEach((r, i) => expect(r).toBeCloseTo([1, 2, 1, 1, 0.25][i], 12));
    // dapo (the default) on-policy per token: -A * ratio / active tokens, zero where the ratio is clipped
    // (the second token of row 1 at 2 > 1.2 with A > 0; the last of row 2 at 0.25 < 0.8 with A < 0).
    const raw = [1, 0, 1, 0.5 * 1, 0];
    const total = raw.reduce((a, b) => a + b, 0);
    views.gradient.flat().forEach((g, i) => expect(g).toBeCloseTo(raw[i] / total, 12));
    expect(views.gradient.flat().reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
  });
});

describe('pieceValues', () => {
  it('averages entropy, multiplies ratios and adds shares over the tokens of a piece', () => {
    const pieces = [{ text: 'ab', logprob: -1, tokens: 2 }, { text: 'c', logprob: -1, tokens: 1 }];
    expect(pieceValues('entropy', pieces, [1, 3, 5])).toEqual([2, 5]);
    expect(pieceValues('ratio', pieces, [2, 3, 0.5])).toEqual([6, 0.5]);
    expect(pieceValues('gradient', pieces, [0.25, 0.25, 0.5])).toEqual([0.5, 0.5]);
    expect(pieceValues('entropy', [{ text: '', logprob: Number.NaN, tokens: 0 }], [])).toEqual([Number.NaN]);
  });

  it('shades each view on its own scale, with a legend that darkens along it', () => {
    const alpha = (color: string) => Number(/, ([\d.]+)\)$/.exec(color)?.[1] ?? 0);
    for (const view of ['entropy', 'gradient'] as const) {
      const stops = VIEW_LEGEND[view].map((s) => alpha(s.color));
      expect([...stops].sort((a, b) => a - b)).toEqual(stops);
    }
    expect(viewShade('ratio', 1)).toBe('transparent');
    expect(viewShade('ratio', 4)).toMatch(/^rgba\(37, 99, 235/);
    expect(viewShade('ratio', 0.25)).toMatch(/^rgba\(234, 88, 12/);
  });
});
