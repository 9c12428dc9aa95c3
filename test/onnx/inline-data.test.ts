/**
 * A graph file's inline weights read one by one (inline-data.ts): the graph with its large
 * raw_data turned into references into the file itself, each then read into an array of its own.
 * The same model comes out: the same initializers byte for byte, the same decoder weights, the
 * same logits from a session built on the pieces, and the engine's fp32 weights and 4-bit blocks
 * are those arrays (no copy, no view into a buffer the size of the file).
 */
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import onnxProto from 'onnx-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { readExternalPieces } from '../../lib/policy/onnx/external-data.js';
import { nodeHost } from '../../lib/policy/onnx/host-node.js';
import { inlineAsExternal, MIN_EXTERNAL_BYTES } from '../../lib/policy/onnx/inline-data.js';
import { GraphIndex } from '../../lib/policy/onnx/structure/graph-index.js';
import { findDecoder } from '../../lib/policy/onnx/structure/find-decoder.js';
import { loraModel } from '../../lib/train/lora-engine.js';
import { buildModel } from '../../scripts/build-model/index.js';
import { SMALL } from '../train/exports.js';
import { TINY_DIR } from './fixtures.js';

const FILE = join(TINY_DIR, 'onnx', 'model.onnx');

async function readPieces(): Promise<{ graph: Uint8Array; externalData: Record<string, Uint8Array>; asked: number[] }> {
  const handle = await open(FILE, 'r');
  const asked: number[] = [];
  try {
    const { size } = await handle.stat();
    const readAt = async (offset: number, length: number) => {
      asked.push(length);
      const piece = new Uint8Array(length);
      const { bytesRead } = await handle.read(piece, 0, length, offset);
      return piece.subarray(0, bytesRead);
    };
    const graph = await inlineAsExternal(readAt, 'model.onnx', size);
    const { graph: renamed, externalData } = await readExternalPieces(graph, async (file, ranges) => {
      expect(file).toBe('model.onnx');
      return Promise.all(ranges.map(({ offset, length }) => readAt(offset, length)));
    });
    return { graph: renamed, externalData, asked };
  } finally {
    await handle.close();
  }
}

const config = JSON.parse(await readFile(join(TINY_DIR, 'config.json'), 'utf8')) as Record<string, unknown>;

let policy: OnnxPolicy;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: TINY_DIR });
});
afterAll(() => policy?.dispose());

describe('inline weights read one by one', () => {
  it('keep every initializer, byte for byte, the large ones as references into the file', async () => {
    const whole = new Uint8Array(await readFile(FILE));
    const { graph, externalData, asked } = await readPieces();
    const before = new GraphIndex(whole);
    const after = new GraphIndex(graph, externalData);
    expect([...after.initializers.keys()]).toEqual([...before.initializers.keys()]);
    let moved = 0;
    for (const name of before.initializers.keys()) {
      expect(after.bytes(name)).toEqual(before.bytes(name));
      if (after.initializers.get(name)!.dataLocation === 1) moved++;
    }
    expect(moved).toBeGreaterThan(0);
    // The structure alone is read whole: no read as large as the file.
    expect(graph.length).toBeLessThan(whole.length / 4);
    expect(Math.max(...asked)).toBeLessThan(whole.length);
    const decoded = onnxProto.onnx.ModelProto.decode(graph);
    expect(decoded.graph?.node?.length).toBe(onnxProto.onnx.ModelProto.decode(whole).graph?.node?.length);
    // Small tensors (norm scales) stay inline.
    const inline = [...after.initializers.values()].filter((t) => t.dataLocation !== 1);
    expect(inline.every((t) => after.bytes(t.name).length < MIN_EXTERNAL_BYTES)).toBe(true);
  });

  it('read little more of the file than the structure while walking it', async () => {
    // Each moved raw_data is jumped over and the walk reads on from its end: a window of 1 MiB
    // there read 158 MB of SmolLM2-135M's 538 MB file for its 290 KB of structure.
    const whole = new Uint8Array(await readFile(FILE));
    let walked = 0;
    let moved = 0;
    const graph = await inlineAsExternal(
      async (offset, length) => {
        walked += length;
        return whole.slice(offset, offset + length);
      },
      'model.onnx',
      whole.length,
      MIN_EXTERNAL_BYTES,
      () => moved++,
    );
    expect(moved).toBeGreaterThan(2);
    expect(walked).toBeLessThanOrEqual(graph.length + (moved + 1) * MIN_EXTERNAL_BYTES);
  });

  it("are each range's bytes in an array of its own, read by the Node host, a range past the file's end cut short", async () => {
    const whole = new Uint8Array(await readFile(FILE));
    const ranges = [
      { offset: 0, length: 100 },
      { offset: 5000, length: 3 * MIN_EXTERNAL_BYTES },
      { offset: 200, length: 50 },
      { offset: whole.length - 10, length: 30 },
    ];
    const pieces = await nodeHost.readRanges({ remoteHost: '', remotePathTemplate: '' }, { local: true, id: TINY_DIR }, 'onnx/model.onnx', ranges);
    expect(pieces.map((p) => Array.from(p))).toEqual(ranges.map(({ offset, length }) => Array.from(whole.subarray(offset, offset + length))));
    expect(pieces[3].length).toBe(10);
    expect(new Set(pieces.map((p) => p.buffer)).size).toBe(ranges.length);
    expect(pieces.slice(0, 3).every((p) => p.byteOffset === 0 && p.buffer.byteLength === p.length)).toBe(true);
  });

  it('refuse a truncated file with a ModelLoadError', async () => {
    const whole = new Uint8Array(await readFile(FILE));
    const cut = whole.subarray(0, Math.floor(whole.length / 2));
    const readAt = async (offset: number, length: number) => cut.slice(offset, offset + length);
    await expect(inlineAsExternal(readAt, 'model.onnx', cut.length)).rejects.toMatchObject({ code: 'ModelLoad', message: expect.stringMatching(/truncated/) });
  });

  it('give the same decoder weights, fp32 arrays used as read', async () => {
    const whole = new Uint8Array(await readFile(FILE));
    const { graph, externalData } = await readPieces();
    const expected = findDecoder(whole, { config });
    const found = findDecoder(graph, { config, externalData });
    expect(found.embedding).toEqual(expected.embedding);
    expect(found.layers).toEqual(expected.layers);
    expect(found.finalNorm).toEqual(expected.finalNorm);
    // Each moved fp32 weight is its piece itself: one copy of the weight.
    const pieces = new Set<ArrayBufferLike>(Object.values(externalData).map((p) => p.buffer));
    const arrays: Float32Array[] = [];
    const walk = (o: unknown): void => {
      if (o instanceof Float32Array) arrays.push(o);
      else if (o && typeof o === 'object') Object.values(o).forEach(walk);
    };
    walk(found.layers);
    const large = arrays.filter((a) => a.byteLength >= MIN_EXTERNAL_BYTES);
    expect(large.length).toBeGreaterThan(0);
    expect(large.every((a) => pieces.has(a.buffer))).toBe(true);
  });

  it('build a session with the same logits as the file', async () => {
    const { graph, externalData } = await readPieces();
    const fromFile = await ort.InferenceSession.create(FILE);
    const fromPieces = await ort.InferenceSession.create(graph, { externalData: Object.entries(externalData).map(([path, data]) => ({ path, data })) });
    const feeds: Record<string, ort.Tensor> = {};
    const layers = Number(config.num_hidden_layers);
    const kvHeads = Number(config.num_key_value_heads);
    const headDim = Number(config.head_dim ?? Number(config.hidden_size) / Number(config.num_attention_heads));
    for (const name of fromFile.inputNames) {
      if (name === 'input_ids') feeds[name] = new ort.Tensor('int64', BigInt64Array.from([3n, 7n, 11n]), [1, 3]);
      else if (name === 'attention_mask') feeds[name] = new ort.Tensor('int64', BigInt64Array.from([1n, 1n, 1n]), [1, 3]);
      else if (name === 'position_ids') feeds[name] = new ort.Tensor('int64', BigInt64Array.from([0n, 1n, 2n]), [1, 3]);
      else feeds[name] = new ort.Tensor('float32', new Float32Array(0), [1, kvHeads, 0, headDim]);
    }
    expect(layers).toBeGreaterThan(0);
    const a = (await fromFile.run(feeds)).logits.data as Float32Array;
    const b = (await fromPieces.run(feeds)).logits.data as Float32Array;
    expect(b).toEqual(a);
    await fromFile.release();
    await fromPieces.release();
  });

  it('are how the Node policy reads its model for the engine', async () => {
    const files = await policy.modelGraph();
    expect(Object.keys(files.externalData).length).toBeGreaterThan(0);
    const model = await loraModel(policy, { r: 2, seed: 1 });
    const whole = findDecoder(new Uint8Array(await readFile(FILE)), { config });
    expect(model.weights.embedding).toEqual(whole.embedding);
    expect(model.weights.layers).toEqual(whole.layers);
  });
});

describe('4-bit blocks read as pieces', () => {
  it('are the pieces themselves in the engine weights', async () => {
    const root = await mkdtemp(join(tmpdir(), 'webgrpo-inline-q4-'));
    try {
      await buildModel({ ...SMALL, names: 'exporter', weights: 'q4', externalData: true }, root);
      const q4 = await loadOnnxPolicy({ model: root, dtype: 'q4' });
      try {
        const files = await q4.modelGraph();
        const model = await loraModel(q4, { r: 2, seed: 1 });
        const pieces = new Set<ArrayBufferLike>(Object.values(files.externalData).map((p) => p.buffer));
        const weight = model.weights.layers[0].q_proj.weight;
        if (weight instanceof Float32Array || weight.kind !== 'q4') throw new Error('expected 4-bit blocks');
        expect(pieces.has(weight.packed.buffer)).toBe(true);
        expect(weight.packed.byteLength).toBe(weight.packed.buffer.byteLength);
      } finally {
        await q4.dispose();
      }
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
