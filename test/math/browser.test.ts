import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrpoRouter } from '../../lib/index.js';
import { computeAdvantages, grpoLoss, mulberry32, tokenLogProbs } from '../../lib/math.js';
import { launchBrowser, type BrowserSession } from '../browser/chromium.js';
import { expectNear } from '../fixtures/near.js';

describe('math core in headless Chromium', () => {
  let session: BrowserSession;
  beforeAll(async () => {
    session = await launchBrowser();
  });
  afterAll(() => session?.close());

  // Chromium and Node round Math.exp / Math.log differently in the last bit, so the float64 results
  // agree to a relative 1e-12 (test/fixtures/near.ts), not bit for bit; the routes are choices and match exactly.
  it('gives the same numbers as in Node, to a relative 1e-12', async () => {
    const rng = mulberry32(21);
    const [b, t, v] = [4, 5, 33];
    const input = {
      rewards: Array.from({ length: 8 }, (_, i) => (i === 3 ? null : Math.round(rng() * 10) / 4)),
      groupSize: 4,
      batch: {
        logps: Array.from({ length: b }, () => Array.from({ length: t }, () => -rng() * 3)),
        oldLogps: Array.from({ length: b }, () => Array.from({ length: t }, () => -rng() * 3)),
        refLogps: Array.from({ length: b }, () => Array.from({ length: t }, () => -rng() * 3)),
        advantages: [1, -0.5, 0.25, -2],
        mask: Array.from({ length: b }, (_, i) => Array.from({ length: t }, (_, j) => (j <= i + 1 ? 1 : 0))),
      },
      config: { lossType: 'grpo' as const, beta: 0.04, delta: 1.5, importanceSamplingLevel: 'sequence' as const },
      logits: Array.from({ length: b * t * v }, () => (rng() - 0.5) * 8),
      dims: [b, t, v],
      ids: Array.from({ length: b * t }, () => Math.floor(rng() * v)),
    };
    const page = await session.open('/test/browser/pages/math.html');
    await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    const got = await page.evaluate((x) => (window as unknown as { mathRun: (x: unknown) => unknown }).mathRun(x), input);

    const router = new GrpoRouter({ seed: 3, minSamples: 0 });
    const lp = tokenLogProbs({ logits: new Float32Array(input.logits), dims: input.dims, ids: input.ids });
    expectNear(got, {
      advantages: computeAdvantages(input.rewards, { groupSize: 4 }),
      loss: grpoLoss(input.batch, input.config),
      logprobs: { logps: Array.from(lp.logps), entropy: Array.from(lp.entropy) },
      routes: Array.from({ length: 8 }, () => router.route('hello', ['a', 'b', 'c'])),
    });
    expect(session.errors).toEqual([]);
  });
});
