/**
 * The setup form's memory note for LoRA on hub models: the library's estimate plus the sampler's
 * weights, against what a tab holds; a setting past it names smaller settings that do fit, each
 * of which really does by the same estimate.
 */
import { describe, expect, it } from 'vitest';
import { stepMemoryNote, TAB_BYTES } from '../../site/lib/step-memory.js';

describe('stepMemoryNote', () => {
  it('is only for LoRA on the hub models', () => {
    expect(stepMemoryNote('skill', 'lora', { groupSize: 8, batchSize: 2, maxNewTokens: 64 })).toBeUndefined();
    expect(stepMemoryNote('smollm2-135m', 'gradient', { groupSize: 8, batchSize: 2, maxNewTokens: 64 })).toBeUndefined();
  });

  it('fits a small step of SmolLM2-135M and says how much it takes', () => {
    const note = stepMemoryNote('smollm2-135m', 'lora', { groupSize: 8, batchSize: 1, maxNewTokens: 64 })!;
    expect(note.fits).toBe(true);
    expect(note.bytes).toBeLessThan(TAB_BYTES);
    expect(note.text).toMatch(/about \d\.\d GB/);
  });

  it('refuses a step past the tab and names smaller settings, each of which fits', () => {
    const settings = { groupSize: 16, batchSize: 16, maxNewTokens: 512 };
    const note = stepMemoryNote('qwen2.5-0.5b', 'lora', settings)!;
    expect(note.fits).toBe(false);
    expect(note.bytes).toBeGreaterThan(TAB_BYTES);
    const prompts = /(\d+) prompts a step/.exec(note.text);
    const replies = /replies of at most (\d+) tokens/.exec(note.text);
    expect(prompts ?? replies).not.toBeNull();
    if (prompts) expect(stepMemoryNote('qwen2.5-0.5b', 'lora', { ...settings, batchSize: Number(prompts[1]) })!.fits).toBe(true);
    if (replies) expect(stepMemoryNote('qwen2.5-0.5b', 'lora', { ...settings, maxNewTokens: Number(replies[1]) })!.fits).toBe(true);
  });
});
