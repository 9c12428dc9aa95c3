/**
 * The bundled skill model as its card describes it: under 10 MB, onnxruntime's log-probs equal the
 * engine's (the weights it was trained with, read back from the ONNX file), the card states every
 * task's held-out accuracy with a mean at temperature 1 in the partial-skill band (20%-60%), and a
 * fresh measurement on other held-out problems (another dataset and sampler seed) agrees with it.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-node';
import { FullTrainingEngine } from '../../lib/train/full-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { readDecoderWeights } from '../../lib/weights/read-onnx.js';
import { loadOnnxPolicy, skillModelPath, type OnnxPolicy } from '../../lib/onnx.js';
import { skillTasks } from '../../lib/tasks/skill.js';
import { meanAccuracy, skillAccuracy } from '../../scripts/pretrain/accuracy.js';
import { chatPromptIds, encodeText } from '../../scripts/pretrain/corpus.js';
import { IM_END_ID } from '../../scripts/build-model/tokenizer.js';

let dir: string;
let policy: OnnxPolicy;
let card: string;
beforeAll(async () => {
  dir = await skillModelPath();
  policy = await loadOnnxPolicy({ model: dir });
  card = await readFile(join(dir, 'README.md'), 'utf8');
});
afterAll(async () => {
  await policy?.dispose();
});

/** The card's accuracy table: task -> [greedy, T=1] as fractions. */
function cardTable(): Map<string, [number, number]> {
  const rows = [...card.matchAll(/^\| ([a-z-]+|mean) \| ([\d.]+)% \| ([\d.]+)% \|$/gm)];
  return new Map(rows.map((m) => [m[1], [Number(m[2]) / 100, Number(m[3]) / 100]]));
}

describe('the bundled skill model', () => {
  it('is small, and onnxruntime computes the same log-probs as the training engine', async () => {
    expect((await stat(join(dir, 'onnx/model.onnx'))).size).toBeLessThan(10e6);
    const weights = await readDecoderWeights(new Uint8Array(await readFile(join(dir, 'onnx/model.onnx'))), { config: JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) });
    const engine = await FullTrainingEngine.create(ort as unknown as GraphRuntime, weights);
    let worst = 0;
    for (const task of skillTasks) {
      for (const item of task.dataset({ size: 2, seed: 77 })) {
        const content = item.messages![0].content as string;
        const reply = [...encodeText(item.answer as string), IM_END_ID];
        const scored = await policy.scoreCompletions({ messages: item.messages, completions: [reply] });
        const { logps } = await engine.forward([{ prompt: chatPromptIds(content), completions: [reply] }], { temperature: 1, reference: false });
        logps.forEach((lp, k) => (worst = Math.max(worst, Math.abs(lp - scored.logprobs[0][k]))));
      }
    }
    engine.dispose();
    expect(worst).toBeLessThan(1e-5);
  });

  it("card states each task's held-out accuracy, with a partial skill at temperature 1", () => {
    const table = cardTable();
    for (const task of [...skillTasks.map((t) => t.name), 'mean']) expect(table.has(task), task).toBe(true);
    const [greedy, sampled] = table.get('mean')!;
    expect(sampled).toBeGreaterThanOrEqual(0.2);
    expect(sampled).toBeLessThanOrEqual(0.6);
    expect(greedy).toBeGreaterThanOrEqual(sampled - 0.05);
    expect(card).toMatch(/npm run pretrain/);
    expect(card).toMatch(/corpus seed \d+/);
  });

  it('measures again as the card says on other held-out problems', async () => {
    const [greedyCard, sampledCard] = cardTable().get('mean')!;
    const options = { size: 12, seed: 31337, samplerSeed: 5 };
    const sampled = meanAccuracy(await skillAccuracy(policy, skillTasks, { ...options, temperature: 1, samples: 4 }));
    const greedy = meanAccuracy(await skillAccuracy(policy, skillTasks, { ...options, temperature: 0, samples: 1 }));
    // 48 problems (192 replies) at T=1: a binomial standard error of about 0.04 around the card's mean.
    expect(Math.abs(sampled - sampledCard), `T=1 ${sampled} vs card ${sampledCard}`).toBeLessThan(0.15);
    expect(Math.abs(greedy - greedyCard), `greedy ${greedy} vs card ${greedyCard}`).toBeLessThan(0.2);
  }, 60_000);
});
