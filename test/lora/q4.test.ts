/**
 * 4-bit base weights: the bundled model quantized here into onnxruntime's MatMulNBits (block 32,
 * with zero points), read packed, scores in the training graphs like the policy's scoring pass of
 * the same 4-bit file (1e-5), the gradients through the 4-bit projections (the float64 graphs
 * widen the blocks) match finite differences, and the lora method trains the 4-bit export end to
 * end, its sampler following the adapter beside the packed weights.
 */
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import { afterAll, describe, expect, it } from 'vitest';
import { loraGrpo } from '../../lib/grad.js';
import { MemoryStore } from '../../lib/index.js';
import { createLoraAdapter, loraTensors, zerosLike } from '../../lib/lora/adapter.js';
import { readLoraCheckpoint } from '../../lib/lora/format.js';
import { digits } from '../../lib/tasks/index.js';
import { readDecoderWeights } from '../../lib/weights/read-onnx.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { TINY_DIR } from '../onnx/fixtures.js';
import type { Q4Matrix } from '../../lib/weights/decoder.js';
import { readFolderWeights } from './fixtures.js';
import { graphEngineFor, graphLogprobs } from './graph-logprobs.js';
import { quantizeQ4 } from './quantize-q4.js';

const { onnx } = onnxProto;
const BLOCK = 32;
const dirs: string[] = [];
let policy: OnnxPolicy | undefined;
afterAll(async () => {
  await policy?.dispose();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** The bundled graph with every layer projection a MatMulNBits node over quantized weights. */
function quantizedGraph(bytes: Uint8Array): Uint8Array {
  const model = onnx.ModelProto.decode(bytes);
  const graph = model.graph as onnxProto.onnx.GraphProto;
  const inits = new Map(graph.initializer.map((t) => [t.name!, t]));
  for (const node of graph.node) {
    const name = node.input![1];
    if (node.opType !== 'MatMul' || !/layers\.\d+\.(self_attn|mlp)\.\w+_proj\.weight$/.test(name)) continue;
    const t = inits.get(name)!;
    const [K, N] = t.dims!.map(Number);
    const raw = t.rawData!;
    const w = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    const { packed, scales, zeroPoints: zeros } = quantizeQ4(w, K, N, BLOCK) as Required<Q4Matrix>;
    const blocks = Math.ceil(K / BLOCK);
    graph.initializer.splice(graph.initializer.indexOf(t), 1);
    graph.initializer.push(
      { name: `${name}.q4`, dims: [N, blocks, BLOCK / 2], dataType: onnx.TensorProto.DataType.UINT8, rawData: packed },
      { name: `${name}.scales`, dims: [N * blocks], dataType: onnx.TensorProto.DataType.FLOAT, rawData: new Uint8Array(scales.buffer) },
      { name: `${name}.zeros`, dims: [zeros.length], dataType: onnx.TensorProto.DataType.UINT8, rawData: zeros },
    );
    node.opType = 'MatMulNBits';
    node.domain = 'com.microsoft';
    node.input = [node.input![0], `${name}.q4`, `${name}.scales`, `${name}.zeros`];
    const int = (n: string, i: number) => ({ name: n, type: onnx.AttributeProto.AttributeType.INT, i });
    node.attribute = [int('K', K), int('N', N), int('bits', 4), int('block_size', BLOCK)];
  }
  model.opsetImport.push({ domain: 'com.microsoft', version: 1 });
  return onnx.ModelProto.encode(model).finish();
}

/** The bundled model's folder with its graph quantized to 4-bit, and its weights as read. */
async function quantizedFolder() {
  const { bytes, config } = await readFolderWeights(TINY_DIR);
  const q4 = quantizedGraph(bytes);
  const dir = await mkdtemp(join(tmpdir(), 'webgrpo-q4-'));
  dirs.push(dir);
  await cp(TINY_DIR, dir, { recursive: true });
  await writeFile(join(dir, 'onnx/model.onnx'), q4);
  return { dir, weights: await readDecoderWeights(q4, { config }) };
}

describe('4-bit MatMulNBits base weights', () => {
  it('score like the scoring pass on the same 4-bit weights, kept packed', async () => {
    const { dir, weights } = await quantizedFolder();
    expect(weights.layers[0].q_proj.weight).toMatchObject({ kind: 'q4', K: 128, N: 128, blockSize: BLOCK });
    policy = await loadOnnxPolicy({ model: dir });
    const prompt = 'Question: 3 + 4 = ?';
    const promptIds = await policy.encode(prompt);
    const completions = [await policy.encode(' 7, of course'), await policy.encode('seven')];
    const scored = await policy.scoreCompletions({ prompt, completions });
    const adapter = createLoraAdapter(weights.shape, { seed: 2 });
    const ours = await graphLogprobs(weights, adapter, { promptIds, completions });
    let checked = 0;
    ours.forEach((row, i) =>
      row.forEach((lp, t) => {
        expect(Math.abs(lp - scored.logprobs[i][t]), `completion ${i} token ${t}`).toBeLessThan(1e-5);
        checked++;
      }),
    );
    expect(checked).toBe(completions[0].length + completions[1].length);
    // The 4-bit model is a different model from the fp32 one (the check above is not vacuous).
    const fp32 = (await readFolderWeights(TINY_DIR)).weights;
    const full = await graphLogprobs(fp32, adapter, { promptIds, completions });
    expect(Math.max(...full.flatMap((row, i) => row.map((lp, t) => Math.abs(lp - ours[i][t]))))).toBeGreaterThan(1e-3);
  });

  it('gives exact gradients through the 4-bit projections', async () => {
    const { bytes, config } = await readFolderWeights(TINY_DIR);
    const weights = await readDecoderWeights(quantizedGraph(bytes), { config });
    const adapter = createLoraAdapter(weights.shape, { r: 2, targetModules: ['k_proj', 'gate_proj'], seed: 3 });
    for (const layer of adapter.layers) for (const pair of Object.values(layer)) pair.B.fill(0.03);
    const group = { promptIds: [1, 40, 41], completions: [[50, 51], [60]] };
    const coefficients = [[0.7, -0.4], [0.9]];
    const engine = await graphEngineFor(weights, adapter, 'float64');
    const loss = async () => (await engine.forward(adapter, [group])).logprobs.reduce((s, row, i) => s + row.reduce((t, lp, k) => t + coefficients[i][k] * lp, 0), 0);
    const grad = await (await engine.forward(adapter, [group])).backward(coefficients);
    // Part by part, the head taking d log p / d hidden in its forward (no entropy term): the same gradient.
    const dLogp = Float64Array.from(coefficients.flat());
    const fused = (await engine.forwardBackward(adapter, [group], 1, (_, start, end) => ({ dLogp: dLogp.slice(start, end), dEntropy: new Float64Array(end - start) }), { entropyGradient: false })).gradient;
    const [want, got] = [loraTensors(grad), loraTensors(fused)];
    want.forEach((w, j) => w.forEach((v, i) => expect(Math.abs(got[j][i] - v)).toBeLessThanOrEqual(1e-6 * Math.max(...Array.from(w, Math.abs)))));
    // A sample of entries of every adapted tensor (the full check is test/train/graph-gradient.test.ts).
    for (const [l, layer] of adapter.layers.entries()) {
      for (const [module, pair] of Object.entries(layer)) {
        for (const which of ['A', 'B'] as const) {
          const params = pair[which];
          for (let i = 0; i < params.length; i += Math.ceil(params.length / 5)) {
            const saved = params[i];
            params[i] = saved + 1e-4;
            const up = params[i];
            const plus = await loss();
            params[i] = saved - 1e-4;
            const down = params[i];
            const minus = await loss();
            params[i] = saved;
            const numeric = (plus - minus) / (up - down);
            const analytic = grad.layers[l][module as 'k_proj']![which][i];
            expect(Math.abs(numeric - analytic) / Math.max(Math.abs(numeric), Math.abs(analytic), 1e-3), `layer ${l} ${module}.${which}[${i}]`).toBeLessThanOrEqual(1e-3);
          }
        }
      }
    }
  });

  it('train through the lora method: each step samples under the adapter the step before left, beside the packed weights', async () => {
    const { dir, weights } = await quantizedFolder();
    const q4Policy = await loadOnnxPolicy({ model: dir });
    try {
      const store = new MemoryStore();
      const run = loraGrpo({ policy: q4Policy, dataset: digits.dataset({ size: 2, seed: 5 }), rewards: digits.rewards, groupSize: 4, batchSize: 1, maxNewTokens: 5, lora: { r: 2, alpha: 4 }, optimizer: { lr: 0.02 }, store, runId: 'q4' });
      let first: ReturnType<typeof readLoraCheckpoint> | undefined;
      for await (const event of run) if (event.type === 'step-end' && event.step === 1) first = readLoraCheckpoint(await store.getAdapter('q4'));
      const result = await run.result();
      expect(result).toMatchObject({ status: 'completed', stepsCompleted: 2 });
      result.trainer.dispose();
      const item = (await store.getStep('q4', 2))!.items[0];
      const group = { promptIds: q4Policy.promptIds(item.prompt), completions: item.rollouts.map((r) => r.tokenIds) };
      const adapted = await graphLogprobs(weights, first!.adapter, group);
      const base = await graphLogprobs(weights, zerosLike(first!.adapter), group);
      let moved = 0;
      item.rollouts.forEach((rollout, c) =>
        rollout.logprobs.forEach((lp, t) => {
          expect(Math.abs(lp - adapted[c][t]), `completion ${c} token ${t}`).toBeLessThan(1e-5);
          moved = Math.max(moved, Math.abs(lp - base[c][t]));
        }),
      );
      expect(moved).toBeGreaterThan(1e-4);
    } finally {
      await q4Policy.dispose();
    }
  });
});
