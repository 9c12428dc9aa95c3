/**
 * An fp16 export's projections stay at 16 bits in the LoRA training graphs (findDecoder's
 * keepHalf, what loraModel reads): the graphs widen each layer's weights as it runs, which is
 * exactly what widening them on reading does, so the log-probs, entropies and gradients are the
 * same bits as on the widened weights (one engine, onnxruntime-node, against itself), in the
 * recomputing backward and in the one that keeps the activations, for half the weights' bytes.
 */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { createLoraAdapter, loraScale, loraTensors } from '../../lib/lora/adapter.js';
import { findDecoder } from '../../lib/policy/onnx/structure/find-decoder.js';
import { LoraGraphs } from '../../lib/train/graph/lora-graph-engine.js';
import { layerWeightInputs } from '../../lib/train/graph/layer-graphs.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { estimateStepMemory } from '../../lib/train/memory.js';
import { LORA_MODULES, moduleDims } from '../../lib/weights/decoder.js';
import { buildExport } from './exports.js';

const runtime = ort as unknown as GraphRuntime;

describe('fp16 projections kept at 16 bits', () => {
  const ex = buildExport({ names: 'exporter', weights: 'fp16', qkvBias: true, tieWordEmbeddings: false });
  const widened = findDecoder(ex.graph, { config: ex.config });
  const half = findDecoder(ex.graph, { config: ex.config, keepHalf: true });

  it('are read as their 16-bit values and fed to the graphs as float16, in half the bytes', () => {
    const weightBytes = (d: typeof half) => d.layers.reduce((n, layer) => n + layerWeightInputs(layer, d.shape, 'float32').filter((i) => i.name.startsWith('w.')).reduce((m, i) => m + i.data.byteLength, 0), 0);
    for (const m of LORA_MODULES) {
      const w = half.layers[1][m].weight;
      if (w instanceof Float32Array || w.kind !== 'float16') throw new Error(`${m} was widened`);
      const { inDim, outDim } = moduleDims(half.shape, m);
      expect([w.K, w.N, w.bits.length]).toEqual([inDim, outDim, inDim * outDim]);
    }
    expect(layerWeightInputs(half.layers[0], half.shape, 'float32').find((i) => i.name === 'w.q_proj')?.type).toBe('float16');
    expect(weightBytes(half) * 2).toBe(weightBytes(widened));
  });

  for (const keep of [false, true]) {
    it(`give the widened weights' log-probs, entropies and gradients to the bit (${keep ? 'activations kept' : 'recomputed in the backward'})`, async () => {
      const adapter = createLoraAdapter(half.shape, { r: 4, seed: 3 });
      for (const layer of adapter.layers) for (const m of LORA_MODULES) layer[m]!.B.forEach((_, i, b) => (b[i] = Math.sin(i + 1) * 0.05));
      const lora = { r: adapter.config.r, scale: loraScale(adapter.config), targetModules: adapter.config.targetModules };
      const groups = [{ promptIds: [3, 8, 5, 1], completions: [[7, 2, 9], [4, 4], [11, 6, 2, 5]] }];
      const run = async (decoder: typeof half) => {
        const graphs = await LoraGraphs.create(runtime, decoder, lora, { activationBudget: keep ? 1 << 30 : 0 });
        try {
          const pass = await graphs.forward(adapter, groups, 0.8);
          const ones = pass.logprobs.map((row) => row.map((_, t) => 0.5 - t * 0.1));
          const grad = await pass.backward(ones, ones);
          return { logprobs: pass.logprobs, entropies: pass.entropies, grad: loraTensors(grad).map((t) => Array.from(t)) };
        } finally {
          await graphs.release();
        }
      };
      const [a, b] = [await run(half), await run(widened)];
      expect(a.logprobs).toEqual(b.logprobs);
      expect(a.entropies).toEqual(b.entropies);
      expect(a.grad).toEqual(b.grad);
      expect(a.grad.some((t) => t.some((x) => x !== 0))).toBe(true);
    });
  }

  it("give the widened weights' gradient part by part (forwardBackward), to the bit with an entropy term and to float32 rounding without one", async () => {
    const adapter = createLoraAdapter(half.shape, { r: 4, seed: 5 });
    for (const layer of adapter.layers) for (const m of LORA_MODULES) layer[m]!.B.forEach((_, i, b) => (b[i] = Math.cos(i + 1) * 0.05));
    const lora = { r: adapter.config.r, scale: loraScale(adapter.config), targetModules: adapter.config.targetModules };
    const groups = [{ promptIds: [3, 8, 5, 1], completions: [[7, 2, 9], [4, 4], [11, 6, 2, 5]] }];
    const [halfGraphs, wideGraphs] = [await LoraGraphs.create(runtime, half, lora, { microBatchTokens: 8 }), await LoraGraphs.create(runtime, widened, lora, { microBatchTokens: 8 })];
    // Per completion, a sensitivity for each token; flat, slot by slot, as forwardBackward asks them.
    const dLogps = groups[0].completions.map((c, i) => c.map((_, t) => 0.5 - (i + t) * 0.05));
    const flat = Float64Array.from(dLogps.flat());
    for (const entropyGradient of [true, false]) {
      const dEntropies = dLogps.map((row) => row.map((v) => (entropyGradient ? -v : 0)));
      const flatEntropy = Float64Array.from(dEntropies.flat());
      const pass = await wideGraphs.forward(adapter, groups, 0.8);
      const want = loraTensors(await pass.backward(dLogps, dEntropies));
      const step = await halfGraphs.forwardBackward(adapter, groups, 0.8, (_, start, end) => ({ dLogp: flat.slice(start, end), dEntropy: flatEntropy.slice(start, end) }), { entropyGradient });
      const got = loraTensors(step.gradient);
      if (entropyGradient) {
        expect(step.logprobs).toEqual(pass.logprobs);
        expect(got.map((t) => Array.from(t))).toEqual(want.map((t) => Array.from(t)));
      } else {
        want.forEach((w, j) => w.forEach((v, i) => expect(Math.abs(got[j][i] - v)).toBeLessThanOrEqual(1e-5 * Math.max(...Array.from(w, Math.abs)))));
      }
    }
    await halfGraphs.release();
    await wideGraphs.release();
  });

  it("are estimated at 2 bytes a weight in the engine (estimateStepMemory's fp16)", () => {
    const settings = { groupSize: 8, promptTokens: 32, completionTokens: 64 };
    const [fp32, fp16] = [estimateStepMemory(half.shape, { ...settings, dtype: 'fp32' }), estimateStepMemory(half.shape, { ...settings, dtype: 'fp16' })];
    const projections = LORA_MODULES.reduce((n, m) => n + moduleDims(half.shape, m).inDim * moduleDims(half.shape, m).outDim, 0) * half.shape.numLayers;
    expect(fp32.weights - fp16.weights).toBe(2 * projections);
    // The sampler's CPU session holds them widened all the same.
    expect(fp16.sampler).toBe(fp32.sampler);
  });
});
