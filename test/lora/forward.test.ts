/**
 * The training forward is the ONNX graph's model: its log-probs equal onnxruntime's
 * (scoreCompletions) on the bundled model and on a differently shaped export (multi-query
 * attention, untied head), and an adapter whose B is zero changes nothing, bit for bit.
 */
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoraAdapter, type LoraAdapter } from '../../lib/lora/adapter.js';
import { loraGroupForward, loraLogprobs } from '../../lib/lora/model.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { buildOtherModel, TINY_DIR } from '../onnx/fixtures.js';
import { readFolderWeights } from './fixtures.js';

const PROMPT = 'Question: what is 12 + 30? Answer:';
const COMPLETIONS = [' 42', ' forty two, surely', 'x'];

let otherDir = '';
const policies: OnnxPolicy[] = [];
beforeAll(async () => {
  otherDir = await buildOtherModel();
});
afterAll(async () => {
  await Promise.all(policies.map((p) => p.dispose()));
  if (otherDir) await rm(dirname(otherDir), { recursive: true, force: true });
});

describe.each([
  ['the bundled model (tied head, 2 kv heads for 4)', () => TINY_DIR],
  ['another export (untied head, 1 kv head for 6)', () => otherDir],
])('%s', (_, dir) => {
  it('gives onnxruntime log-probs to 1e-4 at temperatures 1 and 0.7', async () => {
    const policy = await loadOnnxPolicy({ model: dir() });
    policies.push(policy);
    const { weights } = await readFolderWeights(dir());
    const adapter = createLoraAdapter(weights.shape, { seed: 3 });
    const promptIds = await policy.encode(PROMPT);
    const completions = await Promise.all(COMPLETIONS.map((c) => policy.encode(c)));
    let checked = 0;
    for (const temperature of [1, 0.7]) {
      const scored = await policy.scoreCompletions({ prompt: PROMPT, completions, temperature });
      completions.forEach((completion, i) => {
        const ours = loraLogprobs(weights, adapter, { tokens: [...promptIds, ...completion], completionStart: promptIds.length }, { temperature });
        expect(ours).toHaveLength(completion.length);
        ours.forEach((lp, t) => {
          expect(Math.abs(lp - scored.logprobs[i][t]), `completion ${i} token ${t}`).toBeLessThan(1e-4);
          checked++;
        });
      });
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('scores a group with its prompt computed once as it scores each completion alone', async () => {
    const { weights } = await readFolderWeights(dir());
    const adapter = createLoraAdapter(weights.shape, { seed: 4 });
    for (const pair of Object.values(adapter.layers[0])) pair.B.fill(0.05);
    const promptIds = [1, 40, 41, 42, 43];
    const completions = [[50, 51, 52], [60], [70, 71, 72, 73, 74]];
    const options = { precision: 'float64' as const, temperature: 0.9 };
    const grouped = loraGroupForward(weights, adapter, { promptIds, completions }, options).logprobs;
    completions.forEach((c, i) => {
      const alone = loraLogprobs(weights, adapter, { tokens: [...promptIds, ...c], completionStart: promptIds.length }, options);
      alone.forEach((lp, t) => expect(Math.abs(lp - grouped[i][t])).toBeLessThan(1e-12));
    });
  });
});

describe('an adapter at its start', () => {
  it('scores exactly like the base model while B = 0, and differently once B moves', async () => {
    const { weights } = await readFolderWeights(TINY_DIR);
    const adapter = createLoraAdapter(weights.shape, { r: 4, seed: 11 });
    const none: LoraAdapter = { ...adapter, layers: adapter.layers.map(() => ({})) };
    const sequence = { tokens: [1, 40, 41, 42, 17, 18, 19, 60, 61], completionStart: 4 };
    for (const precision of ['float32', 'float64'] as const) {
      expect(loraLogprobs(weights, adapter, sequence, { precision })).toEqual(loraLogprobs(weights, none, sequence, { precision }));
    }
    adapter.layers[2].v_proj!.B[5] = 0.5;
    const moved = loraLogprobs(weights, adapter, sequence);
    const base = loraLogprobs(weights, none, sequence);
    expect(Math.max(...moved.map((lp, t) => Math.abs(lp - base[t])))).toBeGreaterThan(1e-4);
  });
});
