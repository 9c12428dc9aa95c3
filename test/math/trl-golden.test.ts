/**
 * grpoLoss against golden values from PyTorch: TRL's `_compute_loss` written out with torch and
 * differentiated by autograd (test/math/golden/trl_loss.py, run once with Debian's python3-torch;
 * the JSON is committed and CI never runs Python). Every loss type, token and sequence level, the
 * entropy bonus with and without the high-entropy mask, with and without num_items_in_batch and the
 * KL term: the loss, d loss / d logps and d loss / d entropies (`entropyGrad`) to 1e-12.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { grpoLoss } from '../../lib/math/loss.js';
import type { GrpoLossConfig } from '../../lib/math/loss-config.js';

interface GoldenCase {
  config: GrpoLossConfig & { lossType: string; topEntropyQuantile: number };
  logps: number[][];
  oldLogps?: number[][];
  refLogps: number[][];
  entropies: number[][];
  mask: number[][];
  advantages: number[];
  numItemsInBatch?: number;
  expected: { loss: number; grad: number[][]; entropyGrad: number[][] };
}

const golden = JSON.parse(readFileSync(new URL('./golden/trl-loss.json', import.meta.url), 'utf8')) as { torch: string; cases: GoldenCase[] };
const close = (a: number, b: number) => Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(b));

describe(`grpoLoss equals TRL's loss in PyTorch ${golden.torch} (autograd)`, () => {
  it('covers every loss type with the entropy mask and an explicit num_items_in_batch', () => {
    const types = new Set(golden.cases.filter((c) => c.config.topEntropyQuantile < 1 && c.numItemsInBatch !== undefined).map((c) => c.config.lossType));
    expect(types.size).toBe(8);
  });

  for (const c of golden.cases) {
    const { config } = c;
    const name = `${config.lossType} ${config.importanceSamplingLevel} q=${config.topEntropyQuantile} numItems=${c.numItemsInBatch ?? '-'} beta=${config.beta}${c.oldLogps ? '' : ' on-policy'}`;
    it(name, () => {
      const result = grpoLoss(
        {
          logps: c.logps,
          ...(c.oldLogps ? { oldLogps: c.oldLogps } : {}),
          refLogps: c.refLogps,
          entropies: c.entropies,
          mask: c.mask,
          advantages: c.advantages,
          ...(c.numItemsInBatch !== undefined ? { numItemsInBatch: c.numItemsInBatch } : {}),
        },
        config,
      );
      expect(close(result.loss, c.expected.loss), `loss ${result.loss} vs ${c.expected.loss}`).toBe(true);
      c.expected.grad.forEach((row, i) => row.forEach((g, t) => expect(close(result.grad[i][t], g), `grad[${i}][${t}] ${result.grad[i][t]} vs ${g}`).toBe(true)));
      c.expected.entropyGrad.forEach((row, i) =>
        row.forEach((g, t) => expect(close(result.entropyGrad![i][t], g), `entropyGrad[${i}][${t}] ${result.entropyGrad![i][t]} vs ${g}`).toBe(true)),
      );
    });
  }
});
