/**
 * PEFT interop: the exported folder read by an independent safetensors reader written here (not
 * the library's), import of the same files back with identical log-probs, F16/BF16 files, and
 * typed errors for files that are malformed or that this engine cannot use exactly.
 */
import { describe, expect, it } from 'vitest';
import { createLoraAdapter, type LoraAdapter } from '../../lib/lora/adapter.js';
import { exportPeftAdapter, importPeftAdapter, PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE, peftBaseModel } from '../../lib/lora/peft.js';
import { readSafetensors, writeSafetensors } from '../../lib/weights/safetensors.js';
import { mulberry32 } from '../../lib/math/random.js';
import { TINY_DIR } from '../onnx/fixtures.js';
import { readFolderWeights } from './fixtures.js';
import { graphLogprobs } from './graph-logprobs.js';

/** An independent reading of the safetensors layout: length, JSON header, then raw little-endian bytes. */
function independentRead(file: Uint8Array): { header: Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>; metadata: unknown; data: Buffer } {
  const buffer = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  const n = Number(buffer.readBigUInt64LE(0));
  const json = JSON.parse(buffer.subarray(8, 8 + n).toString('utf8')) as Record<string, never>;
  const { __metadata__: metadata, ...header } = json;
  return { header, metadata, data: buffer.subarray(8 + n) };
}

function trained(adapter: LoraAdapter, seed: number): LoraAdapter {
  const rng = mulberry32(seed);
  for (const layer of adapter.layers) for (const pair of Object.values(layer)) for (let i = 0; i < pair.B.length; i++) pair.B[i] = (2 * rng() - 1) * 0.05;
  return adapter;
}

describe('PEFT export', () => {
  it('writes adapter_config.json and a safetensors file that an independent reader understands', async () => {
    const { weights } = await readFolderWeights(TINY_DIR);
    const adapter = trained(createLoraAdapter(weights.shape, { r: 4, alpha: 8, seed: 5 }), 6);
    const folder = exportPeftAdapter(adapter, { baseModel: 'webgrpo/webgrpo-tiny' });
    const config = JSON.parse(folder[PEFT_CONFIG_FILE]) as Record<string, unknown>;
    expect(config).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      r: 4,
      lora_alpha: 8,
      base_model_name_or_path: 'webgrpo/webgrpo-tiny',
      target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      bias: 'none',
      use_dora: false,
    });

    const file = folder[PEFT_WEIGHTS_FILE];
    const { header, metadata, data } = independentRead(file);
    expect(metadata).toEqual({ format: 'pt' });
    expect((8 + Buffer.from(file).readUInt32LE(0)) % 8).toBe(0);
    expect(Object.keys(header)).toHaveLength(4 * 7 * 2);
    const q = header['base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight'];
    expect(q).toMatchObject({ dtype: 'F32', shape: [4, 128] });
    expect(header['base_model.model.model.layers.3.mlp.down_proj.lora_B.weight']).toMatchObject({ dtype: 'F32', shape: [128, 4] });
    expect(header['base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight']).toMatchObject({ shape: [64, 4] });
    expect(header['base_model.model.model.layers.2.mlp.gate_proj.lora_A.weight']).toMatchObject({ shape: [4, 128] });
    // Offsets tile the data exactly, and the bytes are the adapter's values.
    const spans = Object.values(header).map((h) => h.data_offsets).sort((a, b) => a[0] - b[0]);
    spans.forEach(([begin], i) => expect(begin).toBe(i === 0 ? 0 : spans[i - 1][1]));
    expect(spans.at(-1)![1]).toBe(data.length);
    const B = header['base_model.model.model.layers.2.self_attn.v_proj.lora_B.weight'];
    for (let i = 0; i < 10; i++) expect(data.readFloatLE(B.data_offsets[0] + 4 * i)).toBe(adapter.layers[2].v_proj!.B[i]);
    expect(data.readFloatLE(q.data_offsets[0] + 4 * 129)).toBe(adapter.layers[0].q_proj!.A[129]);
  });

  it('round-trips: export, import, identical log-probs', async () => {
    const { weights } = await readFolderWeights(TINY_DIR);
    const adapter = trained(createLoraAdapter(weights.shape, { r: 2, alpha: 5, targetModules: ['v_proj', 'q_proj', 'down_proj'], seed: 9 }), 10);
    const back = importPeftAdapter(exportPeftAdapter(adapter, { baseModel: 'x' }), weights.shape);
    expect(back.config).toEqual({ r: 2, alpha: 5, targetModules: ['q_proj', 'v_proj', 'down_proj'], useRslora: false });
    expect(back.scale).toBe(2.5);
    const group = { promptIds: [1, 30, 31], completions: [[32, 33, 34, 35, 36]] };
    expect(await graphLogprobs(weights, back, group)).toEqual(await graphLogprobs(weights, adapter, group));
  });
});

describe('PEFT import', () => {
  const shape = { vocabSize: 10, hiddenSize: 8, intermediateSize: 12, numLayers: 2, numHeads: 2, numKvHeads: 1, headDim: 4, ropeTheta: 1e4, rmsNormEps: 1e-6 };
  const config = { peft_type: 'LORA', task_type: 'CAUSAL_LM', r: 2, lora_alpha: 4, target_modules: ['k_proj'] };
  const name = (l: number, w: string) => `base_model.model.model.layers.${l}.self_attn.k_proj.lora_${w}.weight`;

  /** F16 and BF16 files written by hand: 1.5 is exact in both. */
  it.each([
    ['F16', 0x3e00],
    ['BF16', 0x3fc0],
  ])('reads %s tensors', (dtype, bits) => {
    const header = { [name(0, 'A')]: { dtype, shape: [2, 8], data_offsets: [0, 32] }, [name(0, 'B')]: { dtype, shape: [4, 2], data_offsets: [32, 48] } };
    let json = JSON.stringify(header);
    json += ' '.repeat((8 - ((8 + json.length) % 8)) % 8);
    const file = Buffer.alloc(8 + json.length + 48);
    file.writeBigUInt64LE(BigInt(json.length), 0);
    file.write(json, 8);
    for (let i = 0; i < 24; i++) file.writeUInt16LE(bits, 8 + json.length + 2 * i);
    const adapter = importPeftAdapter({ [PEFT_CONFIG_FILE]: JSON.stringify(config), [PEFT_WEIGHTS_FILE]: new Uint8Array(file) }, shape);
    expect(Array.from(adapter.layers[0].k_proj!.A)).toEqual(new Array(16).fill(1.5));
    expect(adapter.layers[1]).toEqual({});
    expect(adapter.scale).toBe(2);
  });

  const good = () => writeSafetensors([
    { name: name(1, 'A'), shape: [2, 8], data: new Float32Array(16) },
    { name: name(1, 'B'), shape: [4, 2], data: new Float32Array(8) },
  ]);

  it('refuses what it cannot use, with typed errors', () => {
    const load = (c: object, file: Uint8Array) => () => importPeftAdapter({ [PEFT_CONFIG_FILE]: JSON.stringify(c), [PEFT_WEIGHTS_FILE]: file }, shape);
    expect(load(config, good())).not.toThrow();
    expect(load({ ...config, use_dora: true }, good())).toThrow(expect.objectContaining({ code: 'Unsupported' }));
    expect(load({ ...config, peft_type: 'IA3' }, good())).toThrow(expect.objectContaining({ code: 'Unsupported' }));
    expect(load({ ...config, r: 3 }, good())).toThrow(expect.objectContaining({ code: 'InvalidInput', message: expect.stringContaining('needs [3, 8]') }));
    expect(load({ ...config, target_modules: ['q_proj'] }, good())).toThrow(expect.objectContaining({ code: 'InvalidInput' }));
    expect(load({ ...config, target_modules: 'all-linear' }, good())).not.toThrow();
    const lonely = writeSafetensors([{ name: name(1, 'A'), shape: [2, 8], data: new Float32Array(16) }]);
    expect(load(config, lonely)).toThrow(expect.objectContaining({ code: 'InvalidInput', message: expect.stringContaining('lora_B missing') }));
    const stray = writeSafetensors([{ name: 'base_model.model.lm_head.weight', shape: [1], data: new Float32Array(1) }]);
    expect(load(config, stray)).toThrow(expect.objectContaining({ code: 'InvalidInput', message: expect.stringContaining('unexpected tensor') }));
    expect(() => importPeftAdapter({ [PEFT_CONFIG_FILE]: '{', [PEFT_WEIGHTS_FILE]: good() }, shape)).toThrow(expect.objectContaining({ code: 'Parse' }));
  });

  it('rejects malformed safetensors files with a ParseError', () => {
    const file = good();
    const headerLength = Number(Buffer.from(file).readBigUInt64LE(0));
    const variants: Array<[string, Uint8Array]> = [
      ['too short', file.subarray(0, 5)],
      ['header past the end', (() => { const f = file.slice(); new DataView(f.buffer).setBigUint64(0, 1n << 40n, true); return f; })()],
      ['truncated data', file.subarray(0, file.length - 4)],
      ['trailing bytes', new Uint8Array([...file, 0, 0, 0, 0])],
      ['not JSON', (() => { const f = file.slice(); f[8] = 0x7b; f[9] = 0x7b; return f; })()],
    ];
    for (const [what, bytes] of variants) expect(() => readSafetensors(bytes), what).toThrow(expect.objectContaining({ code: 'Parse' }));
    const rewrite = (edit: (h: Record<string, { dtype: string; shape: number[]; data_offsets: number[] }>) => void) => {
      const h = JSON.parse(Buffer.from(file.subarray(8, 8 + headerLength)).toString()) as Record<string, { dtype: string; shape: number[]; data_offsets: number[] }>;
      edit(h);
      const json = JSON.stringify(h);
      const out = Buffer.alloc(8 + json.length + file.length - 8 - headerLength);
      out.writeBigUInt64LE(BigInt(json.length));
      out.write(json, 8);
      out.set(file.subarray(8 + headerLength), 8 + json.length);
      return new Uint8Array(out);
    };
    expect(() => readSafetensors(rewrite((h) => (h[name(1, 'A')].dtype = 'I64')))).toThrow(expect.objectContaining({ code: 'Parse', message: expect.stringContaining('F32, F16 or BF16') }));
    expect(() => readSafetensors(rewrite((h) => (h[name(1, 'A')].shape = [3, 8])))).toThrow(expect.objectContaining({ code: 'Parse' }));
    expect(() => readSafetensors(rewrite((h) => (h[name(1, 'B')].data_offsets = [60, 92])))).toThrow(expect.objectContaining({ code: 'Parse' }));
    expect(() => readSafetensors(rewrite((h) => (h[name(1, 'B')].data_offsets = [0, 32])))).toThrow(expect.objectContaining({ code: 'Parse' }));
    expect(readSafetensors(rewrite(() => undefined)).tensors.size).toBe(2);
  });
});

describe('peftBaseModel', () => {
  it('keeps a hub id, flags an ONNX conversion, a local folder and a bundled model, each with what to do', () => {
    expect(peftBaseModel('HuggingFaceTB/SmolLM2-135M-Instruct')).toEqual({ baseModel: 'HuggingFaceTB/SmolLM2-135M-Instruct', source: 'hub' });
    expect(peftBaseModel('gpt2')).toEqual({ baseModel: 'gpt2', source: 'hub' });
    const conversion = peftBaseModel('onnx-community/Qwen2.5-0.5B-Instruct');
    expect(conversion).toMatchObject({ baseModel: 'onnx-community/Qwen2.5-0.5B-Instruct', source: 'hub' });
    expect(conversion.note).toMatch(/ONNX conversion: if its repository has no PyTorch weights, name the model it was converted from/);
    for (const path of ['/home/me/models/llama', './llama', 'C:\\models\\llama']) {
      expect(peftBaseModel(path)).toMatchObject({ baseModel: path, source: 'local', note: expect.stringMatching(/local folder: on another machine/) });
    }
    expect(peftBaseModel(TINY_DIR)).toMatchObject({ baseModel: 'webgrpo-tiny', source: 'bundled', note: expect.stringMatching(/ONNX weights only: transformers cannot load it/) });
    expect(peftBaseModel('/srv/app/node_modules/webgrpo/public/models/webgrpo-skill/')).toMatchObject({ baseModel: 'webgrpo-skill', source: 'bundled' });
  });
});
