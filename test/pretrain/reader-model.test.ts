/**
 * The shipped reader model (public/models/webgrpo-reader) gains from the library a short
 * Training-Free run learns on named-format: held-out exact match with the library against without
 * it, through the registry and the run's own held-out evaluation (scripts/pretrain/library-gain.ts,
 * what its card and BENCHMARKS "exemplars" measure), each prompt shown the experience closest to
 * it, on seeds neither of those uses; and in lessons mode, as its own critic under constrained
 * decoding, no critic step skipped.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Policy } from '../../lib/core/policy.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { NAMED_FORMATS } from '../../lib/tasks/named-format.js';
import { accuracyOf, libraryGain } from '../../scripts/pretrain/library-gain.js';

const READER = fileURLToPath(new URL('../../public/models/webgrpo-reader', import.meta.url));

let policy: Policy;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: READER, device: 'cpu' });
});
afterAll(() => policy?.dispose());

describe('webgrpo-reader', () => {
  it('lifts held-out exact match with the worked examples an exemplars run keeps', async () => {
    const gain = await libraryGain(policy, { mode: 'exemplars', train: { size: 48, seed: 41 }, heldOut: { size: 40, seed: 4141, samples: 2, samplerSeed: 3 } });
    // Measured on this model: greedy 0.0% -> 55.0%, T=1 8.8% -> 51.3% (seeds 41 / 4141), right
    // in four codes' formats. One format written for every word scores at most the largest
    // code's share (27.5% here, "=*="), so the gain asserted is more than that and spans formats.
    expect(gain.library.exemplars.length).toBeGreaterThan(0);
    expect(accuracyOf(gain.after, true) - accuracyOf(gain.before, true)).toBeGreaterThan(0.35);
    // The format of each right reply: the word taken out ("#owl#" -> "#*#").
    const formats = new Set(gain.after.greedyPass!.items.filter((item) => item.samples[0].correct).map((item) => item.samples[0].text.trim().replace(/[a-z]+/g, '*')));
    expect([...formats].every((f) => NAMED_FORMATS.includes(f))).toBe(true);
    expect(formats.size).toBeGreaterThanOrEqual(3);
  }, 240_000);

  it('is its own critic in lessons mode without a skipped critic step', async () => {
    const gain = await libraryGain(policy, { mode: 'lessons', train: { size: 16, seed: 41 }, heldOut: { size: 8, seed: 4141, samples: 1, samplerSeed: 3 } });
    // Measured: 165 critic steps asked (summaries, critiques, group updates, merges), none skipped;
    // the lessons have the taught form ("cow 4 means format *:*") but not the task's code and
    // format (the card says so), so only their form is asserted.
    expect(gain.criticSteps.asked).toBeGreaterThan(50);
    expect(gain.warnings.filter((w) => /skipped|no summary/i.test(w.message))).toEqual([]);
    expect(gain.criticSteps.skipped).toBe(0);
    expect(gain.library.entries.length).toBeGreaterThan(0);
    for (const entry of gain.library.entries) expect(entry.text).toMatch(/^[a-z]+ \d means format \S+$/);
  }, 240_000);
});
