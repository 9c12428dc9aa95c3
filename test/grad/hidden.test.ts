/**
 * The hidden-state rewrite on three decoder shapes (tied head, untied head after a logits-to-keep
 * slice, and a 4-bit MatMulNBits head behind a Cast with external weights): the exposed tensor is
 * exactly the head's input (logits = h W for the head's own weights), a policy with the adapter at
 * B = 0 samples and scores exactly like the base model, and graphs without a findable head fail
 * with a typed error.
 */
import { readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import onnxProto from 'onnx-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelLoadError } from '../../lib/errors.js';
import { createAdapterWeights } from '../../lib/train/head/adapter.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { exposeHiddenState } from '../../lib/policy/onnx/hidden-state.js';
import { buildOtherModel, makeOptimumShaped, tiedHead, TINY_DIR, untiedHead, type HeadWeights } from './models.js';

const { onnx } = onnxProto;

interface Loaded {
  dir: string;
  head: HeadWeights;
  base: OnnxPolicy;
  hidden: OnnxPolicy;
}

const models: Record<string, Loaded> = {};
const temporary: string[] = [];

beforeAll(async () => {
  const otherDir = await buildOtherModel();
  const optimumDir = await buildOtherModel();
  temporary.push(otherDir, optimumDir);
  const heads: Array<[string, string, () => Promise<HeadWeights>]> = [
    ['bundled (tied head)', TINY_DIR, () => tiedHead(TINY_DIR)],
    ['untied head after a logits-to-keep slice', otherDir, () => untiedHead(otherDir)],
    ['4-bit MatMulNBits head behind a Cast, external data', optimumDir, () => makeOptimumShaped(optimumDir)],
  ];
  for (const [name, dir, read] of heads) {
    const head = await read();
    const [base, hidden] = await Promise.all([loadOnnxPolicy({ model: dir }), loadOnnxPolicy({ model: dir, hiddenState: true })]);
    models[name] = { dir, head, base, hidden };
  }
}, 120_000);

afterAll(async () => {
  for (const m of Object.values(models)) await Promise.all([m.base.dispose(), m.hidden.dispose()]);
  for (const dir of temporary) await rm(dirname(dir), { recursive: true, force: true });
});

const names = [
  'bundled (tied head)',
  'untied head after a logits-to-keep slice',
  '4-bit MatMulNBits head behind a Cast, external data',
];

describe.each(names)('%s', (name) => {
  it('exposes the exact input of the LM head', async () => {
    const { hidden, head } = models[name];
    expect(hidden.head).toBeDefined();
    expect(hidden.head!.hiddenSize).toBe(head.hidden);
    expect(hidden.head!.vocabSize).toBe(head.vocab);
    const completions = [[40, 41, 42, 43], [50, 51]];
    let checked = 0;
    let worst = 0;
    await hidden.head!.collect({ prompt: 'The head reads h', completions }, async ({ logits, hidden: h, picks }) => {
      const z = logits.data as Float32Array;
      const hv = h!.data as Float32Array;
      for (const { offset } of picks) {
        const row = offset / head.vocab;
        for (let j = 0; j < head.vocab; j++) {
          let sum = 0;
          for (let i = 0; i < head.hidden; i++) sum += hv[row * head.hidden + i] * head.w[i * head.vocab + j];
          worst = Math.max(worst, Math.abs(sum - z[offset + j]) / (1 + Math.abs(sum)));
        }
        checked++;
      }
    });
    expect(checked).toBe(6);
    expect(worst).toBeLessThan(1e-4);
  });

  it('with B = 0 the adapted policy samples and scores exactly like the base model', async () => {
    const { base, hidden } = models[name];
    const weights = createAdapterWeights({ hiddenSize: hidden.head!.hiddenSize, vocabSize: hidden.head!.vocabSize, rank: 4, scale: 2 }, 3);
    hidden.head!.setAdapter({ kind: 'host', ...weights });
    try {
      const options = { prompt: 'Zero B changes nothing', groupSize: 5, maxNewTokens: 12, seed: 8, temperature: 0.8 };
      const [a, b] = await Promise.all([base.generateGroup(options), hidden.generateGroup(options)]);
      expect(b).toEqual(a);
      const request = { prompt: options.prompt, completions: a.completions.map((c) => c.tokenIds), temperature: 0.8 };
      expect(await hidden.scoreCompletions(request)).toEqual(await base.scoreCompletions(request));
    } finally {
      hidden.head!.setAdapter(undefined);
    }
  });
});

describe('the rewrite', () => {
  it('appends one graph output and keeps every other byte of the file', async () => {
    const bytes = new Uint8Array(await readFile(join(TINY_DIR, 'onnx/model.onnx')));
    const { bytes: out, name, head } = await exposeHiddenState(bytes);
    expect(head).toBe('MatMul');
    const before = onnx.ModelProto.decode(bytes).graph as onnxProto.onnx.GraphProto;
    const after = onnx.ModelProto.decode(out).graph as onnxProto.onnx.GraphProto;
    expect(after.output.map((o) => o.name)).toEqual([...before.output.map((o) => o.name), name]);
    expect(after.output.at(-1)!.type!.tensorType!.elemType).toBe(onnx.TensorProto.DataType.FLOAT);
    expect(after.node.length).toBe(before.node.length);
    expect(after.initializer.map((t) => t.rawData?.length)).toEqual(before.initializer.map((t) => t.rawData?.length));
    // Only the graph's length prefix and the new output differ.
    expect(out.length - bytes.length).toBeLessThan(64);
  });

  it('refuses a graph whose logits come from no projection, with a typed error', async () => {
    const model = onnx.ModelProto.create({
      irVersion: 8,
      opsetImport: [{ domain: '', version: 14 }],
      graph: {
        name: 'not a decoder',
        node: [{ opType: 'Relu', input: ['x'], output: ['logits'] }],
        input: [{ name: 'x', type: { tensorType: { elemType: 1 } } }],
        output: [{ name: 'logits', type: { tensorType: { elemType: 1 } } }],
      },
    });
    await expect(exposeHiddenState(onnx.ModelProto.encode(model).finish())).rejects.toThrow(ModelLoadError);
    await expect(exposeHiddenState(new Uint8Array([0x3a, 0x05, 0x01]))).rejects.toThrow(ModelLoadError);
  });
});
