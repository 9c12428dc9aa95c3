/**
 * collectGarbage in Node without --expose-gc (how vitest runs this file): arrays nothing holds are
 * gone when it resolves, their memory given back (what a LoRA run taking turns under a tight
 * memoryBudget needs before the next turn builds its session), and the flag is set back after.
 */
import { describe, expect, it } from 'vitest';
import { canCollectGarbage, collectGarbage } from '../../lib/policy/onnx/collect-garbage.js';

describe('collectGarbage', () => {
  it('frees unreferenced arrays before it resolves, without exposing gc', async () => {
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
    expect(canCollectGarbage()).toBe(true);
    // Like an engine's released weights: arrays of a few MB each, 64 MB in all, that nothing holds.
    const refs = Array.from({ length: 16 }, () => new WeakRef(new Float32Array(1 << 20).fill(1)));
    const held = process.memoryUsage().arrayBuffers;
    // A WeakRef keeps its target until the task that made it ends.
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(refs.every((r) => r.deref() !== undefined)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(await collectGarbage()).toBe(true);
    expect(refs.every((r) => r.deref() === undefined)).toBe(true);
    expect(held - process.memoryUsage().arrayBuffers).toBeGreaterThanOrEqual(64 << 20);
    // Later calls reuse the function fetched once; gc stays hidden from the program.
    expect(await collectGarbage()).toBe(true);
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });
});
