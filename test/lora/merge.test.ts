/**
 * Sampling follows the adapter: the ONNX model with W + s A^T B^T merged into its initializers,
 * loaded as an ordinary policy, scores and samples like the training forward of the unmerged
 * adapter (1e-4), and a merge of B = 0 scores bit for bit like the original file.
 */
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoraAdapter } from '../../lib/lora/adapter.js';
import { floatToHalf, halfToFloat } from '../../lib/policy/onnx/half.js';
import { mergedWeights, mergeLoraIntoOnnx } from '../../lib/lora/onnx-merge.js';
import { readDecoderWeights } from '../../lib/weights/read-onnx.js';
import { mulberry32 } from '../../lib/math/random.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { TINY_DIR } from '../onnx/fixtures.js';
import { readFolderWeights } from './fixtures.js';
import { graphLogprobs } from './graph-logprobs.js';

const { onnx } = onnxProto;
const dirs: string[] = [];
const policies: OnnxPolicy[] = [];
afterAll(async () => {
  await Promise.all(policies.map((p) => p.dispose()));
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** The bundled model's folder with its graph replaced. */
async function folderWith(model: Uint8Array): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'webgrpo-lora-'));
  dirs.push(dir);
  await cp(TINY_DIR, dir, { recursive: true });
  await writeFile(join(dir, 'onnx/model.onnx'), model);
  return dir;
}

async function load(dir: string): Promise<OnnxPolicy> {
  const policy = await loadOnnxPolicy({ model: dir });
  policies.push(policy);
  return policy;
}

describe('the merged ONNX model', () => {
  it('scores and samples like the training forward of the adapter', async () => {
    const { weights, bytes, config } = await readFolderWeights(TINY_DIR);
    const adapter = createLoraAdapter(weights.shape, { r: 4, alpha: 8, seed: 21 });
    const rng = mulberry32(22);
    for (const layer of adapter.layers) for (const pair of Object.values(layer)) for (let i = 0; i < pair.B.length; i++) pair.B[i] = (2 * rng() - 1) * 0.2;
    const merged = await mergeLoraIntoOnnx(bytes, weights, adapter);
    // The merged file reads back as the merged weights.
    const reread = await readDecoderWeights(merged, { config });
    expect(reread.layers[1].o_proj.weight).not.toEqual(weights.layers[1].o_proj.weight);
    expect(reread.embedding).toEqual(weights.embedding);

    const policy = await load(await folderWith(merged));
    const base = await load(TINY_DIR);
    const prompt = 'Count: 1 2 3';
    const promptIds = await policy.encode(prompt);
    const group = await policy.generateGroup({ prompt, groupSize: 4, maxNewTokens: 12, temperature: 0.9, seed: 5 });
    const baseScores = await base.scoreCompletions({ prompt, completions: group.completions.map((c) => c.tokenIds), temperature: 0.9 });
    let moved = 0;
    const ours = await graphLogprobs(weights, adapter, { promptIds, completions: group.completions.map((c) => c.tokenIds) }, 0.9);
    group.completions.forEach((c, i) => {
      c.logprobs.forEach((lp, t) => {
        expect(Math.abs(lp - ours[i][t]), `completion ${i} token ${t}`).toBeLessThan(1e-4);
        moved = Math.max(moved, Math.abs(lp - baseScores.logprobs[i][t]));
      });
    });
    // The adapter changed the model that sampled, clearly beyond the tolerance.
    expect(moved).toBeGreaterThan(1e-2);
  });

  it('with B = 0 scores bit for bit like the original file', async () => {
    const { weights, bytes } = await readFolderWeights(TINY_DIR);
    const merged = await mergeLoraIntoOnnx(bytes, weights, createLoraAdapter(weights.shape, { seed: 1 }));
    const [policy, base] = await Promise.all([load(await folderWith(merged)), load(TINY_DIR)]);
    const completions = [await base.encode(' one two three four')];
    const a = await policy.scoreCompletions({ prompt: 'Count:', completions });
    const b = await base.scoreCompletions({ prompt: 'Count:', completions });
    expect(a.logprobs).toEqual(b.logprobs);
  });
});

describe('fp16 rounding for merged fp16 weights', () => {
  it('rounds to the nearest half, ties to even, and reads back exactly', () => {
    for (const x of [0, 1, -2.5, 65504, 6.1e-5, 5.96e-8, 1e-3, 3.14159, -1234.5]) {
      const back = halfToFloat(floatToHalf(x));
      // Within half an ulp of a half: 2^-11 relative for normals, 2^-25 absolute for subnormals.
      expect(Math.abs(back - x)).toBeLessThanOrEqual(Math.max(Math.abs(x) * 2 ** -11, 2 ** -25));
    }
    expect(floatToHalf(1 + 2 ** -11)).toBe(0x3c00); // tie: stays even
    expect(floatToHalf(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie: rounds up to even
    expect(floatToHalf(70000)).toBe(0x7c00);
    for (let bits = 0; bits < 0x7c00; bits += 37) expect(floatToHalf(halfToFloat(bits))).toBe(bits);
  });
});

describe('fp16 initializers', () => {
  it('are read widened and merged back as fp16, rounded to nearest', async () => {
    const { bytes, config, weights } = await readFolderWeights(TINY_DIR);
    // The bundled graph with every projection weight stored as fp16 (read and merge only: the
    // graph's types are not made consistent for a session).
    const model = onnx.ModelProto.decode(bytes);
    const graph = model.graph as onnxProto.onnx.GraphProto;
    for (const t of graph.initializer as onnxProto.onnx.TensorProto[]) {
      if (!/_proj\.weight$/.test(t.name)) continue;
      const f32 = new Float32Array(t.rawData.buffer.slice(t.rawData.byteOffset, t.rawData.byteOffset + t.rawData.byteLength));
      const f16 = new Uint16Array(f32.length);
      f32.forEach((x, i) => (f16[i] = floatToHalf(x)));
      t.dataType = onnx.TensorProto.DataType.FLOAT16;
      t.rawData = new Uint8Array(f16.buffer);
    }
    const half = onnx.ModelProto.encode(model).finish();
    const read = await readDecoderWeights(half, { config });
    const q = read.layers[1].q_proj.weight as Float32Array;
    const original = weights.layers[1].q_proj.weight as Float32Array;
    q.forEach((x, i) => expect(x).toBe(halfToFloat(floatToHalf(original[i]))));
    // Marked as 16-bit (an engine may keep them so); the float32 embedding and the fp32 model's weights are not.
    expect(read.layers[1].q_proj.half).toBe('float16');
    expect(read.embeddingHalf).toBeUndefined();
    expect(weights.layers[1].q_proj.half).toBeUndefined();

    const adapter = createLoraAdapter(read.shape, { r: 2, targetModules: ['q_proj'], seed: 8 });
    adapter.layers[1].q_proj!.B.fill(0.25);
    const merged = await mergeLoraIntoOnnx(half, read, adapter);
    const back = await readDecoderWeights(merged, { config });
    const expected = mergedWeights(read, adapter).get(read.layers[1].q_proj.initializer!)!;
    (back.layers[1].q_proj.weight as Float32Array).forEach((x, i) => expect(x).toBe(halfToFloat(floatToHalf(expected[i]))));
    expect(back.layers[1].q_proj.weight).not.toEqual(q);
    expect(back.layers[2].q_proj.weight).toEqual(read.layers[2].q_proj.weight);
  });
});
