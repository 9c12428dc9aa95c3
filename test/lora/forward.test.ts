/**
 * The training forward (the LoRA training graphs on onnxruntime-node) is the ONNX graph's model:
 * its log-probs equal the scoring pass's (scoreCompletions, the same backend) to 1e-5 on the
 * bundled model and on a differently shaped export (multi-query attention, untied head), a group
 * scores with its prompt once as each completion alone, and an adapter whose B is zero changes
 * nothing, bit for bit.
 */
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoraAdapter, type LoraAdapter } from '../../lib/lora/adapter.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { buildOtherModel, TINY_DIR } from '../onnx/fixtures.js';
import { readFolderWeights } from './fixtures.js';
import { graphLogprobs } from './graph-logprobs.js';

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
  it("gives the scoring pass's log-probs to 1e-5 at temperatures 1 and 0.7", async () => {
    const policy = await loadOnnxPolicy({ model: dir() });
    policies.push(policy);
    const { weights } = await readFolderWeights(dir());
    const adapter = createLoraAdapter(weights.shape, { seed: 3 });
    const promptIds = await policy.encode(PROMPT);
    const completions = await Promise.all(COMPLETIONS.map((c) => policy.encode(c)));
    let checked = 0;
    for (const temperature of [1, 0.7]) {
      const scored = await policy.scoreCompletions({ prompt: PROMPT, completions, temperature });
      const ours = await graphLogprobs(weights, adapter, { promptIds, completions }, temperature);
      completions.forEach((completion, i) => {
        expect(ours[i]).toHaveLength(completion.length);
        ours[i].forEach((lp, t) => {
          expect(Math.abs(lp - scored.logprobs[i][t]), `completion ${i} token ${t}`).toBeLessThan(1e-5);
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
    const grouped = await graphLogprobs(weights, adapter, { promptIds, completions }, 0.9, 'float64');
    for (const [i, c] of completions.entries()) {
      const [alone] = await graphLogprobs(weights, adapter, { promptIds, completions: [c] }, 0.9, 'float64');
      alone.forEach((lp, t) => expect(Math.abs(lp - grouped[i][t])).toBeLessThan(1e-12));
    }
  });
});

describe('an adapter at its start', () => {
  it('scores exactly like the base model while B = 0, and differently once B moves', async () => {
    const { weights } = await readFolderWeights(TINY_DIR);
    const adapter = createLoraAdapter(weights.shape, { r: 4, seed: 11 });
    // The base model: the same graphs with every A zero too, so nothing of the adapter can reach the sum.
    const none: LoraAdapter = structuredClone(adapter);
    for (const layer of none.layers) for (const pair of Object.values(layer)) pair.A.fill(0);
    const group = { promptIds: [1, 40, 41, 42], completions: [[17, 18, 19, 60, 61]] };
    for (const precision of ['float32', 'float64'] as const) {
      expect(await graphLogprobs(weights, adapter, group, 1, precision)).toEqual(await graphLogprobs(weights, none, group, 1, precision));
    }
    adapter.layers[2].v_proj!.B[5] = 0.5;
    const [moved] = await graphLogprobs(weights, adapter, group);
    const [base] = await graphLogprobs(weights, none, group);
    expect(Math.max(...moved.map((lp, t) => Math.abs(lp - base[t])))).toBeGreaterThan(1e-4);
  });
});
