/**
 * Graphs that only run the two passes transformers.js runs (a prefill from an empty cache, one token
 * on a cache), like onnxruntime-genai's exports whose causal mask is built from input_ids: the load
 * finds out, generation prefills in one pass, scoring runs from an empty cache, and the numbers
 * equal transformers.js and a twin graph with a general mask. A graph that cannot run either way
 * is refused with the graph's inputs named.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelLoadError } from '../../lib/errors.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { buildModel, TINY, type ModelSpec } from '../../scripts/build-model/index.js';
import { expectLogprobsMatch, loadReference, referenceGreedy } from './export-checks.js';

const SPEC: ModelSpec = { ...TINY, seed: 7, numLayers: 2, maxPositionEmbeddings: 4096 };

let root = '';
let twoPass: OnnxPolicy;
let general: OnnxPolicy;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'webgrpo-passes-'));
  await Promise.all([buildModel({ ...SPEC, causalMask: 'input-ids' }, join(root, 'input-ids')), buildModel(SPEC, join(root, 'general'))]);
  [twoPass, general] = await Promise.all([loadOnnxPolicy({ model: join(root, 'input-ids') }), loadOnnxPolicy({ model: join(root, 'general') })]);
});
afterAll(async () => {
  await Promise.all([twoPass?.dispose(), general?.dispose()]);
  if (root) await rm(root, { recursive: true, force: true });
});

describe('a graph whose causal mask only supports the two transformers.js passes', () => {
  it('is a genuine export: transformers.js generates with it, and it rejects several tokens on a cache', async () => {
    const reference = await loadReference(join(root, 'input-ids'));
    const ids = [1, 40, 41, 42];
    const greedy = await referenceGreedy(reference, ids, 8);
    expect(greedy).toHaveLength(8);
    // The pass webgrpo would run without the probe: two new tokens on a one-token cache.
    const session = (reference as unknown as { sessions: { model: { run(feeds: object): Promise<unknown> } } }).sessions.model;
    const { Tensor } = await import('@huggingface/transformers');
    const feeds: Record<string, unknown> = {
      input_ids: new Tensor('int64', BigInt64Array.of(40n, 41n), [1, 2]).ort_tensor,
      attention_mask: new Tensor('int64', BigInt64Array.of(1n, 1n, 1n), [1, 3]).ort_tensor,
      position_ids: new Tensor('int64', BigInt64Array.of(1n, 2n), [1, 2]).ort_tensor,
    };
    for (let i = 0; i < SPEC.numLayers; i++) {
      for (const kind of ['key', 'value']) {
        feeds[`past_key_values.${i}.${kind}`] = new Tensor('float32', new Float32Array(SPEC.numKvHeads * SPEC.headDim), [1, SPEC.numKvHeads, 1, SPEC.headDim]).ort_tensor;
      }
    }
    await expect(session.run(feeds)).rejects.toThrow(/expand/i);
    await reference.dispose();
  });

  it('is detected at load and reported in info.passMode', () => {
    expect(twoPass.info.passMode).toBe('two-pass');
    expect(general.info.passMode).toBe('incremental');
  });

  it('generates, scores and decodes greedily like transformers.js and like the same weights with a general mask', async () => {
    const reference = await loadReference(join(root, 'input-ids'));
    for (const [prompt, temperature] of [['The quick brown fox', 1], ['Scores at another temperature', 0.7]] as const) {
      const options = { prompt, groupSize: 4, maxNewTokens: 12, seed: 9, temperature };
      const group = await twoPass.generateGroup(options);
      await expectLogprobsMatch(twoPass, reference, prompt, group, temperature, 1e-4);
      const twin = await general.generateGroup(options);
      expect(twin.completions.map((c) => c.tokenIds)).toEqual(group.completions.map((c) => c.tokenIds));
    }
    const greedy = await twoPass.generateGroup({ prompt: 'Hello', groupSize: 2, maxNewTokens: 16, temperature: 0 });
    const expected = await referenceGreedy(reference, greedy.promptTokenIds, 16);
    for (const c of greedy.completions) expect(c.tokenIds).toEqual(expected);
    await reference.dispose();
  });

  it('takes a 1,800-token prompt in one pass and scores long completions over it', async () => {
    const prompt = 'a long prompt, '.repeat(120);
    const group = await twoPass.generateGroup({ prompt, groupSize: 2, maxNewTokens: 40, seed: 3 });
    const scored = await twoPass.scoreCompletions({ prompt, completions: group.completions.map((c) => c.tokenIds) });
    const twin = await general.scoreCompletions({ prompt, completions: group.completions.map((c) => c.tokenIds) });
    group.completions.forEach((c, i) =>
      c.logprobs.forEach((lp, t) => {
        expect(Math.abs(lp - scored.logprobs[i][t])).toBeLessThan(1e-4);
        expect(Math.abs(lp - twin.logprobs[i][t])).toBeLessThan(1e-4);
      }),
    );
  });

  it('gives the gradient path its hidden states (the rewrite finds the head)', async () => {
    const policy = await loadOnnxPolicy({ model: join(root, 'input-ids'), hiddenState: true });
    try {
      expect(policy.info.passMode).toBe('two-pass');
      const windows: number[] = [];
      await policy.head!.collect({ prompt: 'Hidden', completions: [[40, 41, 42], [43]] }, async (window) => {
        expect(window.hidden!.dims.at(-1)).toBe(SPEC.hiddenSize);
        windows.push(window.picks.length);
      });
      expect(windows.reduce((a, b) => a + b, 0)).toBe(4);
    } finally {
      await policy.dispose();
    }
  });
});

describe('a graph that runs neither way', () => {
  it('is refused at load with a ModelLoadError that names its inputs', async () => {
    // The same export with its cache outputs cut off from the past: one token on a cache then
    // attends to itself only, and computes other logits than the prefill.
    const dir = join(root, 'broken');
    await buildModel({ ...SPEC, causalMask: 'input-ids' }, dir);
    const file = join(dir, 'onnx/model.onnx');
    const model = onnxProto.onnx.ModelProto.decode(await readFile(file));
    for (const node of model.graph!.node!) if (node.output!.some((name) => name.startsWith('present.'))) node.input = node.input!.slice(1);
    await writeFile(file, onnxProto.onnx.ModelProto.encode(model).finish());
    const error = await loadOnnxPolicy({ model: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelLoadError);
    expect((error as Error).message).toMatch(/input_ids, attention_mask, position_ids, past_key_values\.0\.key/);
  });
});
