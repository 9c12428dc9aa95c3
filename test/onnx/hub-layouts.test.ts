/**
 * The hub's layouts at a small shape, through the public API a user calls: Optimum names,
 * `model.onnx` + `model.onnx_data` (external data, read tensor by tensor), fp16 and q4f16 in
 * float16 throughout (MatMulNBits with float16 scales), q4, with q/k/v biases and q/k norms. Each
 * loads, samples with the scoring pass's log-probs, trains one LoRA step through GrpoTrainer on
 * loraEngine, and exports a PEFT folder with PEFT's names and shapes. (At this shape the float16
 * graphs' sampler and scoring pass agree to 1e-4; at SmolLM2-135M's shape in q4f16 they are about
 * 2e-3 apart on onnxruntime's CPU kernels: one-token decode steps and the whole-sequence pass
 * round differently in float16. fp32 stays exact there.)
 */
import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportPeftAdapter, GrpoTrainer, groupRolloutBatch, loraEngine, loraModel, PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE, readDecoderWeights } from '../../lib/grad.js';
import { GrpoConfig } from '../../lib/math.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { ModelLoadError, UnsupportedError } from '../../lib/errors.js';
import { readExternalPieces, rangesOfStream } from '../../lib/policy/onnx/external-data.js';
import { readSafetensors } from '../../lib/weights/safetensors.js';
import { floatWeight, LORA_MODULES, moduleDims } from '../../lib/weights/decoder.js';
import { AutoModelForCausalLM, AutoTokenizer } from '@huggingface/transformers';
import { buildHubFolder, buildModel, HUB_DTYPES, MODEL_FILES, type ModelSpec } from '../../scripts/build-model/index.js';
import { SMALL } from '../train/exports.js';

let root = '';
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'webgrpo-hub-layouts-'));
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

type Dtype = keyof typeof MODEL_FILES;

async function folder(name: string, overrides: Partial<ModelSpec>): Promise<{ dir: string; dtype: Dtype }> {
  const dir = join(root, name);
  await buildModel({ ...SMALL, names: 'exporter', ...overrides }, dir);
  return { dir, dtype: overrides.weights ?? 'fp32' };
}

const LAYOUTS: Array<[string, Partial<ModelSpec>]> = [
  ['fp32, model.onnx + model.onnx_data, q/k/v biases', { externalData: true, qkvBias: true }],
  ['fp16 in float16 throughout, q/k norms', { weights: 'fp16', halfActivations: true, qkNorm: true }],
  ['q4 with external data', { weights: 'q4', externalData: true }],
  ['q4f16 (float16 scales and activations) with external data, q/k/v biases and q/k norms', { weights: 'q4f16', externalData: true, qkvBias: true, qkNorm: true }],
];

describe('hub layouts load, sample, train and export', () => {
  for (const [label, overrides] of LAYOUTS) {
    it(label, async () => {
      const { dir, dtype } = await folder(label.replace(/\W+/g, '-'), overrides);
      const policy = await loadOnnxPolicy({ model: dir, dtype });
      try {
        const prompt = 'Hub layouts';
        const group = await policy.generateGroup({ prompt, groupSize: 3, maxNewTokens: 6, seed: 5, temperature: 1 });
        const completions = group.completions.map((c) => c.tokenIds);
        const scored = await policy.scoreCompletions!({ prompt, completions, temperature: 1 });
        group.completions.forEach((c, i) => c.logprobs.forEach((lp, t) => expect(Math.abs(lp - scored.logprobs[i][t])).toBeLessThan(1e-4)));

        const model = await loraModel(policy, { r: 4, seed: 2 });
        // The reader by exporter names (what a merge writes back through) finds the same weights in the same pieces.
        const files = await policy.modelGraph();
        const named = await readDecoderWeights(files.graph, { config: files.config, externalData: files.externalData });
        expect(named.shape).toEqual(model.weights.shape);
        expect(named.layers[1].down_proj.weight).toEqual(floatWeight(model.weights.layers[1].down_proj.weight) ?? model.weights.layers[1].down_proj.weight);
        const q = model.weights.layers[0].q_proj;
        if (dtype.startsWith('q4')) {
          // Kept packed; q4f16's float16 scales are read (widened) for the training graphs.
          expect(q.weight instanceof Float32Array).toBe(false);
          expect((q.weight as { scales: Float32Array }).scales).toBeInstanceOf(Float32Array);
        } else {
          expect(q.half).toBe(dtype === 'fp16' ? 'float16' : undefined);
          // An fp16 export's projections stay at 16 bits for the training graphs.
          expect(q.weight instanceof Float32Array).toBe(dtype !== 'fp16');
        }
        expect(q.bias !== undefined).toBe(overrides.qkvBias === true);
        expect(model.weights.layers[0].qNorm !== undefined).toBe(overrides.qkNorm === true);

        const engine = loraEngine(model);
        // The training graphs compute in float32: on a float32 base they give the sampler's
        // log-probs; a float16 base's sampler rounds every activation to float16, which the
        // float32 graphs do not (about 1e-3 apart at this shape).
        const stats = await engine.forward([{ prompt: { prompt }, completions }], { temperature: 1, reference: true });
        const sampled = group.completions.flatMap((c) => c.logprobs);
        const gap = Math.max(...sampled.map((lp, i) => Math.abs(lp - stats.refLogps![i])));
        expect(gap).toBeLessThan(overrides.weights === 'q4f16' || overrides.halfActivations ? 1e-2 : 1e-5);
        engine.release();
        const trainer = new GrpoTrainer(engine, { lr: 1e-2 }, new GrpoConfig({ numGenerations: 3 }), { temperature: 1 });
        const before = model.adapter.layers.map((layer) => Float32Array.from(layer.down_proj!.B));
        const { loss, metrics } = await trainer.trainStep(groupRolloutBatch([{ completions: group.completions, rewards: [1, 0, 0.5] }]), [{ prompt }]);
        expect(Number.isFinite(loss)).toBe(true);
        expect(metrics.gradNorm).toBeGreaterThan(0);
        expect(model.adapter.layers.some((layer, l) => layer.down_proj!.B.some((b, i) => b !== before[l][i]))).toBe(true);
        trainer.dispose();

        const peft = exportPeftAdapter(model.adapter, { baseModel: 'HuggingFaceTB/SmolLM2-135M-Instruct' });
        const config = JSON.parse(peft[PEFT_CONFIG_FILE]) as { r: number; target_modules: string[] };
        expect(config.r).toBe(4);
        expect([...config.target_modules].sort()).toEqual([...LORA_MODULES].sort());
        const tensors = readSafetensors(peft[PEFT_WEIGHTS_FILE]).tensors;
        expect(tensors.size).toBe(SMALL.numLayers * LORA_MODULES.length * 2);
        for (let l = 0; l < SMALL.numLayers; l++) {
          for (const m of LORA_MODULES) {
            const { inDim, outDim } = moduleDims(model.weights.shape, m);
            const parent = m.endsWith('_proj') && ['gate_proj', 'up_proj', 'down_proj'].includes(m) ? 'mlp' : 'self_attn';
            expect(tensors.get(`base_model.model.model.layers.${l}.${parent}.${m}.lora_A.weight`)?.shape).toEqual([4, inDim]);
            expect(tensors.get(`base_model.model.model.layers.${l}.${parent}.${m}.lora_B.weight`)?.shape).toEqual([outDim, 4]);
          }
        }
      } finally {
        await policy.dispose();
      }
    });
  }
});

describe('a hub folder', () => {
  it("holds every dtype beside one config.json with the hub's keys, and transformers.js' own generate() runs each dtype from it", async () => {
    const dir = join(root, 'hub-folder');
    await buildHubFolder({ ...SMALL, names: 'exporter', modelType: 'qwen3', qkNorm: true }, HUB_DTYPES, dir, 'Qwen/Qwen3-0.6B');
    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
    expect(config).toMatchObject({ model_type: 'qwen3', architectures: ['Qwen3ForCausalLM'], _name_or_path: 'Qwen/Qwen3-0.6B', head_dim: SMALL.headDim, rope_scaling: null });
    expect(config['transformers.js_config']).toEqual({ dtype: 'fp32', use_external_data_format: { 'model.onnx': 1 }, kv_cache_dtype: { fp16: 'float16', q4f16: 'float16' } });
    const tokenizer = await AutoTokenizer.from_pretrained(dir, { local_files_only: true });
    for (const dtype of HUB_DTYPES) {
      const model = await AutoModelForCausalLM.from_pretrained(dir, { dtype, local_files_only: true });
      try {
        const output = (await model.generate({ ...tokenizer('Hub folder'), max_new_tokens: 3, do_sample: false })) as { dims: number[] };
        expect(output.dims[1], dtype).toBeGreaterThan(3);
      } finally {
        await model.dispose();
      }
    }
  });
});

describe('external data', () => {
  let policy: OnnxPolicy;
  let dataSize = 0;
  beforeAll(async () => {
    const { dir } = await folder('external-lazy', { externalData: true });
    // Bytes no tensor refers to, and a config.json that does not announce the data file: the graph's
    // own references say what to read.
    await appendFile(join(dir, 'onnx/model.onnx_data'), new Uint8Array(1 << 16).fill(7));
    dataSize = (await stat(join(dir, 'onnx/model.onnx_data'))).size;
    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
    delete config['transformers.js_config'].use_external_data_format;
    await writeFile(join(dir, 'config.json'), JSON.stringify(config));
    policy = await loadOnnxPolicy({ model: dir });
  });
  afterAll(() => policy?.dispose());

  it('is read tensor by tensor: no piece is the whole file, and no byte outside a tensor is read', async () => {
    const { externalData } = await policy.modelGraph();
    const pieces = Object.entries(externalData);
    expect(pieces.length).toBeGreaterThan(10);
    expect(pieces.every(([name]) => /^model\.onnx_data@\d+$/.test(name))).toBe(true);
    const read = pieces.reduce((n, [, bytes]) => n + bytes.length, 0);
    expect(read).toBeLessThanOrEqual(dataSize - (1 << 16));
    expect(Math.max(...pieces.map(([, bytes]) => bytes.length))).toBeLessThan(read);
  });

  it('trains from the pieces, and the policy follows the adapter on a session built from them', async () => {
    const model = await loraModel(policy, { r: 2, seed: 1 });
    const prompt = 'External data';
    const base = await policy.generateGroup({ prompt, groupSize: 2, maxNewTokens: 5, seed: 3 });
    for (const layer of model.adapter.layers) for (const pair of Object.values(layer)) pair!.B.fill(0.05);
    await policy.followAdapter(model.adapter);
    const adapted = await policy.scoreCompletions!({ prompt, completions: base.completions.map((c) => c.tokenIds) });
    expect(adapted.logprobs.flat().some((lp, i) => Math.abs(lp - base.completions.flatMap((c) => c.logprobs)[i]) > 1e-3)).toBe(true);
  });

  it('a short data file or a reference outside the folder is a ModelLoadError naming the tensor', async () => {
    const { graph } = await buildSmallExternal();
    await expect(readExternalPieces(graph, async (_file, ranges) => ranges.map((r) => new Uint8Array(r.length - 1)))).rejects.toThrow(/ends before the data of/);
    const escaped = graph.slice();
    const at = Buffer.from(escaped).indexOf('model.onnx_data');
    escaped.set(Buffer.from('../onnx_data_x'), at);
    await expect(readExternalPieces(escaped, async (_f, ranges) => ranges.map((r) => new Uint8Array(r.length)))).rejects.toBeInstanceOf(ModelLoadError);
  });

  it('renames only the references: fields the schema here does not know are kept, byte for byte', async () => {
    const { graph } = await buildSmallExternal();
    // Field 99 of ModelProto (length-delimited, 3 bytes), unknown to onnx-proto's schema.
    const unknown = Uint8Array.from([0x9a, 0x06, 3, 1, 2, 3]);
    const withUnknown = new Uint8Array([...graph, ...unknown]);
    const { graph: renamed, externalData } = await readExternalPieces(withUnknown, async (_f, ranges) => ranges.map((r) => new Uint8Array(r.length)));
    expect(Array.from(renamed.subarray(renamed.length - unknown.length))).toEqual(Array.from(unknown));
    expect(Object.keys(externalData).length).toBeGreaterThan(3);
    expect(Buffer.from(renamed).includes(Buffer.from(Object.keys(externalData)[0]))).toBe(true);
  });

  it('copies ranges out of a stream whatever the chunking', async () => {
    const bytes = Uint8Array.from({ length: 300 }, (_, i) => i % 251);
    const ranges = [{ offset: 0, length: 7 }, { offset: 10, length: 100 }, { offset: 110, length: 1 }, { offset: 250, length: 50 }];
    for (const size of [1, 3, 64, 300]) {
      async function* chunks() {
        for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
      }
      const pieces = await rangesOfStream(chunks(), ranges);
      pieces.forEach((piece, i) => expect(Array.from(piece)).toEqual(Array.from(bytes.subarray(ranges[i].offset, ranges[i].offset + ranges[i].length))));
    }
  });
});

async function buildSmallExternal(): Promise<{ graph: Uint8Array }> {
  const { dir } = await folder('external-errors', { externalData: true, numLayers: 1 });
  return { graph: new Uint8Array(await readFile(join(dir, 'onnx/model.onnx'))) };
}

describe("Llama 3's rope scaling", () => {
  it('is in the graph (the scores change) and config.json, and LoRA trains on it: adapter-off log-probs equal the scoring pass', async () => {
    const ropeScaling = { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 } as const;
    const plain = await folder('rope-plain', {});
    const scaled = await folder('rope-scaled', { ropeScaling });
    const config = JSON.parse(await readFile(join(scaled.dir, 'config.json'), 'utf8'));
    expect(config.rope_scaling).toEqual(ropeScaling);
    const [a, b] = await Promise.all([loadOnnxPolicy({ model: plain.dir }), loadOnnxPolicy({ model: scaled.dir })]);
    try {
      // Long enough that the positions reach the frequencies the scaling divides (wavelengths past 16).
      const prompt = 'Rotary scaling changes long-wavelength positions, so a prompt of some length sees it.';
      const group = await b.generateGroup({ prompt, groupSize: 3, maxNewTokens: 12, seed: 1, temperature: 1 });
      const completions = group.completions.map((c) => c.tokenIds);
      const [pa, pb] = await Promise.all([a.scoreCompletions!({ prompt, completions, temperature: 1 }), b.scoreCompletions!({ prompt, completions, temperature: 1 })]);
      expect(Math.max(...pa.logprobs[0].map((lp, t) => Math.abs(lp - pb.logprobs[0][t])))).toBeGreaterThan(1e-4);
      const scoredB = pb.logprobs.flat();

      // Both readers carry the scaling into the shape; the structure reader's model trains.
      const model = await loraModel(b, { r: 2, seed: 3 });
      expect(model.weights.shape.ropeScaling).toEqual(ropeScaling);
      const named = await loraModel(b, model.adapter, 'names');
      expect(named.weights.shape).toEqual(model.weights.shape);

      const engine = loraEngine(model);
      const stats = await engine.forward([{ prompt: { prompt }, completions }], { temperature: 1, reference: true });
      expect(Math.max(...scoredB.map((lp, i) => Math.abs(lp - stats.refLogps![i])))).toBeLessThan(1e-5);
      engine.release();
      const trainer = new GrpoTrainer(engine, { lr: 1e-2 }, new GrpoConfig({ numGenerations: 3 }), { temperature: 1 });
      const before = model.adapter.layers.map((layer) => Float32Array.from(layer.q_proj!.B));
      const { loss, metrics } = await trainer.trainStep(groupRolloutBatch([{ completions: group.completions, rewards: [1, 0, 0.5] }]), [{ prompt }]);
      expect(Number.isFinite(loss)).toBe(true);
      expect(metrics.gradNorm).toBeGreaterThan(0);
      expect(model.adapter.layers.some((layer, l) => layer.q_proj!.B.some((v, i) => v !== before[l][i]))).toBe(true);
      trainer.dispose();

      // Any other scaling scheme is refused by name, by both readers, rather than trained with the wrong frequencies.
      const files = await b.modelGraph();
      const yarn = { ...files.config, rope_scaling: { rope_type: 'yarn', factor: 4, original_max_position_embeddings: 64 } };
      const refused = { modelGraph: async () => ({ ...files, config: yarn }), promptIds: (input: Parameters<typeof b.promptIds>[0]) => b.promptIds(input) };
      for (const reader of ['structure', 'names'] as const) {
        const error = await loraModel(refused, { r: 2 }, reader).catch((e: unknown) => e);
        expect(error, reader).toBeInstanceOf(UnsupportedError);
        expect((error as Error).message, reader).toMatch(/"yarn"/);
      }
    } finally {
      await Promise.all([a.dispose(), b.dispose()]);
    }
  });
});
