/**
 * A loaded policy follows a LoRA adapter by replacing its graph: after `replaceGraph` with the
 * merged model it scores like the training forward of the adapter (1e-4), the base graph brings
 * back the base model's scores bit for bit, and a graph of another shape is refused with the
 * policy left as it was.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLoraAdapter } from '../../lib/lora/adapter.js';
import { mergeLoraIntoOnnx } from '../../lib/lora/onnx-merge.js';
import { readDecoderWeights } from '../../lib/weights/read-onnx.js';
import { mulberry32 } from '../../lib/math/random.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { exposeHiddenState } from '../../lib/policy/onnx/hidden-state.js';
import { TINY_DIR } from '../onnx/fixtures.js';
import { graphLogprobs } from './graph-logprobs.js';

let policy: OnnxPolicy | undefined;
afterAll(() => policy?.dispose());

describe('OnnxPolicy.replaceGraph', () => {
  it('samples and scores from the merged weights, and back from the base graph', async () => {
    policy = await loadOnnxPolicy({ model: TINY_DIR });
    const { graph, externalData, config } = await policy.modelGraph();
    const weights = await readDecoderWeights(graph, { config, externalData });
    const adapter = createLoraAdapter(weights.shape, { r: 2, seed: 3 });
    const rng = mulberry32(4);
    for (const layer of adapter.layers) for (const pair of Object.values(layer)) for (let i = 0; i < pair.B.length; i++) pair.B[i] = (2 * rng() - 1) * 0.3;

    const prompt = 'Count: 1 2';
    const group = await policy.generateGroup({ prompt, groupSize: 3, maxNewTokens: 8, seed: 1 });
    const completions = group.completions.map((c) => c.tokenIds);
    const before = await policy.scoreCompletions({ prompt, completions });

    await policy.replaceGraph(await mergeLoraIntoOnnx(graph, weights, adapter));
    const after = await policy.scoreCompletions({ prompt, completions });
    const promptIds = policy.promptIds({ prompt });
    let moved = 0;
    const ours = await graphLogprobs(weights, adapter, { promptIds, completions });
    completions.forEach((_, i) => {
      ours[i].forEach((lp, t) => {
        expect(Math.abs(after.logprobs[i][t] - lp)).toBeLessThan(1e-4);
        moved = Math.max(moved, Math.abs(after.logprobs[i][t] - before.logprobs[i][t]));
      });
    });
    expect(moved).toBeGreaterThan(1e-2);
    // Sampling follows too: the same seed draws from the adapted distribution.
    const adapted = await policy.generateGroup({ prompt, groupSize: 3, maxNewTokens: 8, seed: 1 });
    const sampled = await graphLogprobs(weights, adapter, { promptIds, completions: adapted.completions.map((c) => c.tokenIds) });
    adapted.completions.forEach((c, i) => c.logprobs.forEach((lp, t) => expect(Math.abs(lp - sampled[i][t])).toBeLessThan(1e-4)));

    await policy.replaceGraph(graph);
    expect((await policy.scoreCompletions({ prompt, completions })).logprobs).toEqual(before.logprobs);
  });

  it('refuses a graph with other outputs and keeps its weights', async () => {
    policy ??= await loadOnnxPolicy({ model: TINY_DIR });
    const { graph } = await policy.modelGraph();
    const completions = [[10, 11, 12]];
    const before = await policy.scoreCompletions({ prompt: 'Count:', completions });
    const other = (await exposeHiddenState(graph)).bytes;
    await expect(policy.replaceGraph(other)).rejects.toMatchObject({ code: 'InvalidInput' });
    await expect(policy.replaceGraph(new Uint8Array())).rejects.toMatchObject({ code: 'InvalidInput' });
    expect((await policy.scoreCompletions({ prompt: 'Count:', completions })).logprobs).toEqual(before.logprobs);
  });
});
