/**
 * The sampler follows the adapter being trained with no merge: OnnxPolicy.followAdapter rewrites
 * the graph once so its projections take A and B as inputs, then only hands over new arrays. The
 * policy's scoring under the adapter equals the graph engine's forward and the merged-weights
 * path (mergeLoraIntoOnnx + replaceGraph), sampling agrees with scoring, an update is followed,
 * and replaceGraph returns to plain weights.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoraAdapter, type LoraAdapter } from '../../lib/lora/adapter.js';
import { mergeLoraIntoOnnx } from '../../lib/lora/onnx-merge.js';
import type { DecoderWeights } from '../../lib/weights/decoder.js';
import { mulberry32 } from '../../lib/math/random.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { findDecoder } from '../../lib/policy/onnx/structure/find-decoder.js';
import { LoraGraphs } from '../../lib/train/graph/lora-graph-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { buildModel } from '../../scripts/build-model/index.js';
import { SMALL } from './exports.js';

let root = '';
let dir = '';
let policy: OnnxPolicy;
let weights: DecoderWeights;
let graph: Uint8Array;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'webgrpo-follow-'));
  dir = join(root, 'model');
  await buildModel({ ...SMALL, qkvBias: true, tieWordEmbeddings: false }, dir);
  graph = new Uint8Array(await readFile(join(dir, 'onnx/model.onnx')));
  weights = findDecoder(graph, { config: JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown> }) as DecoderWeights;
  policy = await loadOnnxPolicy({ model: dir });
});
afterAll(async () => {
  await policy?.dispose();
  if (root) await rm(root, { recursive: true, force: true });
});

function moved(seed: number): LoraAdapter {
  const adapter = createLoraAdapter(weights.shape, { r: 4, alpha: 8, seed });
  const rng = mulberry32(seed + 1);
  for (const layer of adapter.layers) for (const pair of Object.values(layer)) for (let i = 0; i < pair.B.length; i++) pair.B[i] = (2 * rng() - 1) * 0.3;
  return adapter;
}

const maxDiff = (a: number[][], b: number[][]) => Math.max(...a.flatMap((row, i) => row.map((v, t) => Math.abs(v - b[i][t]))));

describe('OnnxPolicy.followAdapter', () => {
  it('scores and samples under the adapter as the graph engine and the merged weights do, follows an update, and replaceGraph returns to the base', async () => {
    const prompt = 'Follow the adapter';
    const base = await policy.generateGroup({ prompt, groupSize: 3, maxNewTokens: 8, seed: 4 });
    const completions = base.completions.map((c) => c.tokenIds);
    const baseScores = await policy.scoreCompletions({ prompt, completions });

    const adapter = moved(5);
    await policy.followAdapter(adapter);
    const followed = await policy.scoreCompletions({ prompt, completions });
    expect(maxDiff(followed.logprobs, baseScores.logprobs)).toBeGreaterThan(1e-2);

    const engine = await LoraGraphs.create(ort as unknown as GraphRuntime, weights, { r: 4, scale: adapter.scale, targetModules: adapter.config.targetModules });
    const pass = await engine.forward(adapter, [{ promptIds: base.promptTokenIds, completions }]);
    expect(maxDiff(followed.logprobs, pass.logprobs)).toBeLessThan(1e-5);

    const sampled = await policy.generateGroup({ prompt, groupSize: 2, maxNewTokens: 8, seed: 9 });
    const rescored = await policy.scoreCompletions({ prompt, completions: sampled.completions.map((c) => c.tokenIds) });
    expect(maxDiff(sampled.completions.map((c) => c.logprobs), rescored.logprobs)).toBeLessThan(1e-4);

    // An update in place, followed: only new inputs.
    for (const layer of adapter.layers) for (const pair of Object.values(layer)) pair.B.reverse();
    await policy.followAdapter(adapter);
    const updated = await policy.scoreCompletions({ prompt, completions });
    const again = await engine.forward(adapter, [{ promptIds: base.promptTokenIds, completions }]);
    expect(maxDiff(updated.logprobs, again.logprobs)).toBeLessThan(1e-5);
    expect(maxDiff(updated.logprobs, followed.logprobs)).toBeGreaterThan(1e-3);

    // The merge path gives the same numbers with a new session.
    const merged = await mergeLoraIntoOnnx(graph, weights, adapter);
    await policy.replaceGraph(merged);
    const mergedScores = await policy.scoreCompletions({ prompt, completions });
    expect(maxDiff(mergedScores.logprobs, updated.logprobs)).toBeLessThan(1e-5);

    await policy.replaceGraph(graph);
    expect(maxDiff((await policy.scoreCompletions({ prompt, completions })).logprobs, baseScores.logprobs)).toBeLessThan(1e-6);
    await engine.release();
  });
});
