/**
 * The bundled sorter model (the first run's) as its card describes it: small, the skill model's
 * architecture, onnxruntime's log-probs equal to the engine's, and its held-out sort-words profile
 * re-measured on other held-out problems and sampler seeds: greedy mostly wrong, one of eight T=1
 * replies right on most problems, distinct greedy replies (not one answer for all).
 */
import { readFile, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FullTrainingEngine } from '../../lib/train/full-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { readDecoderWeights } from '../../lib/weights/read-onnx.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { sortWords } from '../../lib/tasks/skill.js';
import { chatPromptIds, encodeText } from '../../scripts/pretrain/corpus.js';
import { IM_END_ID } from '../../scripts/build-model/tokenizer.js';
import { sorterProfile } from '../../scripts/pretrain/sorter-profile.js';

const dir = fileURLToPath(new URL('../../public/models/webgrpo-sorter', import.meta.url));
let policy: OnnxPolicy;
let card: string;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: dir });
  card = await readFile(join(dir, 'README.md'), 'utf8');
});
afterAll(async () => {
  await policy?.dispose();
});

describe('the bundled sorter model', () => {
  it('is small, the skill model’s shape, and onnxruntime computes the engine’s log-probs', async () => {
    expect((await stat(join(dir, 'onnx/model.onnx'))).size).toBeLessThan(10e6);
    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
    const skill = JSON.parse(await readFile(join(dir, '../webgrpo-skill/config.json'), 'utf8'));
    expect(config).toEqual(skill);
    const weights = await readDecoderWeights(new Uint8Array(await readFile(join(dir, 'onnx/model.onnx'))), { config });
    const engine = await FullTrainingEngine.create(ort as unknown as GraphRuntime, weights);
    let worst = 0;
    for (const item of sortWords.dataset({ size: 3, seed: 77 })) {
      const reply = [...encodeText(item.answer as string), IM_END_ID];
      const scored = await policy.scoreCompletions({ messages: item.messages, completions: [reply] });
      const { logps } = await engine.forward([{ prompt: chatPromptIds(item.messages![0].content as string), completions: [reply] }], { temperature: 1, reference: false });
      logps.forEach((lp, k) => (worst = Math.max(worst, Math.abs(lp - scored.logprobs[0][k]))));
    }
    engine.dispose();
    expect(worst).toBeLessThan(1e-5);
  });

  it('is mostly wrong greedily on held-out problems while one of eight samples is right on most, as its card says', async () => {
    const row = /\| ([\d.]+)% \| ([\d.]+)% \| ([\d.]+)% \|/.exec(card);
    expect(row, 'the card’s profile row').not.toBeNull();
    const [greedy, , passAt8] = row!.slice(1).map((x) => Number(x) / 100);
    expect(greedy).toBeLessThan(0.4);
    expect(passAt8).toBeGreaterThan(0.7);
    // Other held-out problems and sampler seeds than the card's: 48 problems, so a margin of about two standard errors.
    const fresh = await sorterProfile(policy, { size: 48, seed: 4242, k: 8, samplerSeed: 77 });
    expect(fresh.greedy).toBeLessThan(greedy + 0.15);
    expect(fresh.passAtK).toBeGreaterThan(passAt8 - 0.15);
    expect(fresh.passAtK - fresh.greedy).toBeGreaterThan(0.3);
    expect(fresh.distinctGreedy).toBeGreaterThan(fresh.problems * 0.9);
  });
});
