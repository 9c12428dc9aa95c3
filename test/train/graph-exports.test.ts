/**
 * The training graphs built from exports in every style (found by structure, named as Optimum and
 * onnxruntime-genai name them, fp32, fp16 and 4-bit), run by onnxruntime-node: with B at zero their
 * log-probs equal the policy's own scoring pass of the export (transformers.js on onnxruntime-node)
 * to 1e-5; and a foreign export trains end to end: GRPO steps raise the rewarded completion.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoraAdapter, loraScale } from '../../lib/lora/adapter.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { findDecoder } from '../../lib/policy/onnx/structure/find-decoder.js';
import { LoraGraphs } from '../../lib/train/graph/lora-graph-engine.js';
import { loraEngine } from '../../lib/train/lora-engine.js';
import { GrpoTrainer } from '../../lib/train/trainer.js';
import { groupRolloutBatch } from '../../lib/train/rollouts.js';
import { GrpoConfig } from '../../lib/math.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { buildModel, MODEL_FILES } from '../../scripts/build-model/index.js';
import { SMALL, STYLES } from './exports.js';

const runtime = ort as unknown as GraphRuntime;
let root = '';
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'webgrpo-graph-exports-'));
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

async function exportFolder(label: string, overrides: Partial<typeof SMALL>) {
  const spec = { ...SMALL, ...overrides };
  const dir = join(root, label.replace(/\W+/g, '-'));
  await buildModel(spec, dir);
  const graph = new Uint8Array(await readFile(join(dir, MODEL_FILES[spec.weights ?? 'fp32'])));
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  return { dir, decoder: findDecoder(graph, { config }) };
}

describe('training graphs of every export style', () => {
  for (const [label, overrides] of STYLES) {
    it(`equal the scoring pass of ${label}`, async () => {
      const { dir, decoder } = await exportFolder(label, overrides);
      const policy = await loadOnnxPolicy({ model: dir });
      try {
        const prompt = 'Graph training, scored';
        const group = await policy.generateGroup({ prompt, groupSize: 3, maxNewTokens: 9, seed: 2 });
        const completions = group.completions.map((c) => c.tokenIds);
        const scored = await policy.scoreCompletions!({ prompt, completions, temperature: 0.9 });
        const adapter = createLoraAdapter(decoder.shape, { seed: 1 });
        const engine = await LoraGraphs.create(runtime, decoder, { r: adapter.config.r, scale: loraScale(adapter.config), targetModules: adapter.config.targetModules });
        const pass = await engine.forward(adapter, [{ promptIds: group.promptTokenIds, completions }], 0.9);
        let worst = 0;
        scored.logprobs.forEach((row, i) => row.forEach((lp, t) => (worst = Math.max(worst, Math.abs(lp - pass.logprobs[i][t]), Math.abs(scored.entropies[i][t] - pass.entropies[i][t])))));
        expect(worst).toBeLessThan(1e-5);
        await engine.release();
      } finally {
        await policy.dispose();
      }
    });
  }

  it('train a foreign export end to end: GrpoTrainer steps over the graph engine on an Optimum-named, untied, biased export raise the rewarded completion', async () => {
    const { decoder } = await exportFolder('foreign', { names: 'exporter', tieWordEmbeddings: false, qkvBias: true, numKvHeads: 1 });
    const adapter = createLoraAdapter(decoder.shape, { seed: 3 });
    const graph = await LoraGraphs.create(runtime, decoder, { r: adapter.config.r, scale: adapter.scale, targetModules: adapter.config.targetModules });
    const promptIds = [1, 40, 41, 42];
    const completions = [[50, 51, 52], [60, 61, 62], [70, 71]];
    const engine = loraEngine({ weights: decoder, adapter, promptIds: () => promptIds }, { graph });
    expect(engine.backend).toBe('onnxruntime');
    const trainer = new GrpoTrainer(engine, { lr: 1e-2 }, new GrpoConfig({ numGenerations: 3, beta: 0, entropyCoeff: 0 }));
    const sum = (row: number[]) => row.reduce((a, b) => a + b, 0);
    const scores = async () => (await graph.forward(adapter, [{ promptIds, completions }])).logprobs.map(sum);
    const first = await scores();
    for (let i = 0; i < 5; i++) {
      // Sampled (old log-probs) under the adapter as it is now: on policy, every step.
      const old = (await graph.forward(adapter, [{ promptIds, completions }])).logprobs;
      const result = await trainer.trainStep(groupRolloutBatch([{ completions: completions.map((tokenIds, c) => ({ tokenIds, logprobs: old[c] })), rewards: [1, 0, 0] }]), [{ prompt: 'ids' }]);
      expect(result.metrics.tokens).toBe(8);
    }
    const last = await scores();
    expect(last[0]).toBeGreaterThan(first[0] + 0.5);
    expect(last[1]).toBeLessThan(first[1]);
    expect(engine.updates).toBe(5);
    trainer.dispose();
  });
});

describe('4-bit weights kept packed in the training graphs', () => {
  it('give the A/B gradients of the float64 graphs of the same weights widened (forward MatMulNBits, backward DequantizeLinear)', async () => {
    const { decoder } = await exportFolder('q4-grad', { names: 'exporter', weights: 'q4' });
    expect(decoder.layers[0].q_proj.weight instanceof Float32Array).toBe(false);
    const adapter = createLoraAdapter(decoder.shape, { seed: 4 });
    for (const layer of adapter.layers) for (const pair of Object.values(layer)) pair.B.forEach((_, i) => (pair.B[i] = Math.sin(i) * 0.2));
    const graph = await LoraGraphs.create(runtime, decoder, { r: adapter.config.r, scale: adapter.scale, targetModules: adapter.config.targetModules });
    const group = { promptIds: [1, 30, 31], completions: [[40, 41, 42], [43]] };
    const dlogps = [[0.5, -1, 0.25], [1]];
    const pass = await graph.forward(adapter, [group]);
    const grad = await pass.backward(dlogps);
    // MatMulNBits has no double kernel: the float64 graphs dequantize the blocks into plain MatMuls.
    const wide = await LoraGraphs.create(runtime, decoder, { r: adapter.config.r, scale: adapter.scale, targetModules: adapter.config.targetModules }, { precision: 'float64' });
    const widePass = await wide.forward(adapter, [group]);
    const reference = await widePass.backward(dlogps);
    pass.logprobs.forEach((row, i) => row.forEach((lp, t) => expect(Math.abs(lp - widePass.logprobs[i][t])).toBeLessThan(1e-5)));
    reference.layers.forEach((layer, l) => {
      for (const [m, pair] of Object.entries(layer)) {
        for (const which of ['A', 'B'] as const) {
          const want = pair[which];
          const got = grad.layers[l][m as keyof typeof layer]![which];
          const scale = Math.max(...Array.from(want, Math.abs));
          expect(Math.max(...Array.from(want, (v, i) => Math.abs(v - got[i]))) / scale, `layer ${l} ${m}.${which}`).toBeLessThan(1e-4);
        }
      }
    });
    await graph.release();
    await wide.release();
  });
});
