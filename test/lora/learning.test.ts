/**
 * Learning that the head adapter cannot do, side by side: on the pretrained skill model, the
 * `first-letter` reward (the share of the reply's characters that are the first letter of the
 * word in the prompt) rises with full-depth LoRA while the LM-head adapter stays near its start.
 * Same training words, group size, steps and seed for both; measured on held-out words (one per
 * letter, never trained on), 8 samples each. The right reply changes with the word, so a head
 * that shifts which tokens come out cannot earn it; LoRA on every layer changes how the prompt is
 * read. Measured by `npm run bench -- learning` (BENCHMARKS.md) on three seeds: LoRA 9 -> 16, 8 -> 15,
 * 6 -> 19 of 26 words answered with the right letter, head 9 -> 5, 8 -> 9, 6 -> 8. This seed: LoRA
 * 0.103 -> 0.243 reward and 8 -> 15 words; head 0.103 -> 0.127, 8 -> 9. The thresholds keep about
 * half of those margins.
 */
import { describe, expect, it } from 'vitest';
import { MODELS, trainHead, trainLora } from '../../scripts/bench/_first-letter-grpo.js';

const SKILL = MODELS.find((m) => m.name === 'webgrpo-skill')!;
const SEED = 1;

describe('learning a prompt-dependent reward on the skill model', () => {
  it('full-depth LoRA rises where the head adapter stays near its start', async () => {
    const lora = await trainLora(SKILL, SEED);
    const head = await trainHead(SKILL, SEED);
    // Both start from the same base model, sampled with the same seeds.
    expect(head.before.reward).toBeCloseTo(lora.before.reward, 6);

    expect(lora.after.reward - lora.before.reward).toBeGreaterThanOrEqual(0.07);
    expect(lora.after.right - lora.before.right).toBeGreaterThanOrEqual(4);

    expect(Math.abs(head.after.reward - head.before.reward)).toBeLessThanOrEqual(0.05);
    expect(Math.abs(head.after.right - head.before.right)).toBeLessThanOrEqual(3);

    expect(lora.after.reward - head.after.reward).toBeGreaterThanOrEqual(0.06);
  }, 300_000);
});
