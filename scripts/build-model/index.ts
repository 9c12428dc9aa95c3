/**
 * Writes a complete transformers.js model folder for a `ModelSpec`:
 *
 *   config.json, generation_config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx
 *   (or the dtype's file, `onnx/model_q4f16.onnx`; with external data also `onnx/model.onnx_data`)
 *
 * `onnx/model.onnx` is the fp32 file transformers.js looks for (`subfolder: 'onnx'`, no dtype
 * suffix); `transformers.js_config.dtype = 'fp32'` keeps its WASM default (q8, which would look for
 * `model_quantized.onnx`) from asking for files that do not exist.
 */
import { mkdir, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildGenaiGraph } from './genai.js';
import { HUB_SHAPES, hubSpec, parameterCount, type HubDtype, type HubName } from './hub.js';
import { buildLlamaGraph, halfActivations } from './llama.js';
import type { ExternalPiece } from './onnx-graph.js';
import { validateSpec, type ModelSpec, type PresetName } from './spec.js';
import { BOS_ID, EOS_IDS, PAD_ID, tokenizerConfigJson, tokenizerJson, vocabulary } from './tokenizer.js';
import { initWeights, type Weights } from './weights.js';

export { BENCH, PRESETS, TINY, type ModelSpec, type PresetName } from './spec.js';
export { HUB_DTYPES, HUB_SHAPES, type HubDtype, type HubName } from './hub.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Where each preset is written by default. The tiny model lives in `public/` (committed, served by
 * the playground); the bench model goes to the gitignored `build/models/`, outside `public/`, so the
 * playground's build never copies its 113 MB. The Vite server of tests and benchmarks serves the repo
 * root, so browsers load it from `BENCH_MODEL_URL`.
 */
export const MODEL_DIRS: Record<PresetName, string> = {
  tiny: join(root, 'public/models/webgrpo-tiny'),
  bench: join(root, 'build/models/webgrpo-bench'),
};
export const BENCH_MODEL_URL = '/build/models/webgrpo-bench';

/** Where `buildHubModel` writes a hub-shaped folder by default (gitignored). */
export function hubModelDir(name: HubName): string {
  return join(root, 'build/models/hub', name);
}

/** The file transformers.js looks for under `onnx/` for each dtype. */
export const MODEL_FILES = { fp32: 'onnx/model.onnx', fp16: 'onnx/model_fp16.onnx', q4: 'onnx/model_q4.onnx', q4f16: 'onnx/model_q4f16.onnx' } as const;

export interface BuiltModel {
  dir: string;
  files: string[];
  parameters: number;
  vocabSize: number;
}

/** Writes the folder; `trained` replaces the seeded initial weights (the pretrained skill model's). */
export async function buildModel(spec: ModelSpec, dir: string, trained?: Weights): Promise<BuiltModel> {
  validateSpec(spec);
  const vocab = vocabulary(spec.reservedTokens);
  const weights = trained ?? initWeights(spec, vocab.length);
  await mkdir(join(dir, 'onnx'), { recursive: true });
  const graph = await writeGraph(spec, weights, vocab.length, dir);
  const files = await writeCommonFiles(spec, vocab, dir, configJson(spec, vocab.length, [graph], spec.weights ?? 'fp32'));
  return { dir, files: [...files, ...graph.files], parameters: parameterCount(spec, vocab.length), vocabSize: vocab.length };
}

/**
 * A hub-shaped folder (hub.ts): the model's shape with seeded random weights, one graph file per
 * dtype in the hub's layout, and a config.json with the hub model's keys. The weights are drawn
 * once for every dtype. config.json's `transformers.js_config.dtype` is the first dtype built, so
 * a load that names none finds a file that exists.
 */
export function buildHubModel(name: HubName, dtypes: readonly HubDtype[], dir = hubModelDir(name)): Promise<BuiltModel> {
  return buildHubFolder(HUB_SHAPES[name].spec, dtypes, dir, HUB_SHAPES[name].hubId);
}

/** A folder in the hub's layout for any spec (tests build one at a small shape). */
export async function buildHubFolder(base: ModelSpec, dtypes: readonly HubDtype[], dir: string, hubId?: string): Promise<BuiltModel> {
  if (dtypes.length === 0) throw new RangeError('buildHubModel needs at least one dtype');
  const vocab = vocabulary(base.reservedTokens);
  const weights = initWeights(base, vocab.length);
  await mkdir(join(dir, 'onnx'), { recursive: true });
  const graphs: WrittenGraph[] = [];
  for (const dtype of dtypes) {
    const spec = hubSpec(base, dtype, vocab.length);
    validateSpec(spec);
    graphs.push(await writeGraph(spec, weights, vocab.length, dir));
  }
  const files = await writeCommonFiles(base, vocab, dir, configJson(base, vocab.length, graphs, dtypes[0], hubId));
  return { dir, files: [...files, ...graphs.flatMap((g) => g.files)], parameters: parameterCount(base, vocab.length), vocabSize: vocab.length };
}

interface WrittenGraph {
  /** The graph file, `model_q4f16.onnx`. */
  graphFile: string;
  files: string[];
  external: boolean;
  half: boolean;
}

async function writeGraph(spec: ModelSpec, weights: Weights, vocabSize: number, dir: string): Promise<WrittenGraph> {
  const file = MODEL_FILES[spec.weights ?? 'fp32'];
  const graphFile = file.slice('onnx/'.length);
  const half = spec.graph !== 'genai' && halfActivations(spec);
  if (!spec.externalData) {
    const onnx = spec.graph === 'genai' ? buildGenaiGraph(spec, weights, vocabSize) : buildLlamaGraph(spec, weights, vocabSize);
    await writeFile(join(dir, file), onnx);
    return { graphFile, files: [file], external: false, half };
  }
  if (spec.graph === 'genai') throw new RangeError('external data is written for the Optimum-style graph only');
  const dataFile = `${graphFile}_data`;
  const { model, data, dataSize } = buildLlamaGraph(spec, weights, vocabSize, dataFile);
  await writeFile(join(dir, file), model);
  await writePieces(join(dir, 'onnx', dataFile), data, dataSize);
  return { graphFile, files: [file, `onnx/${dataFile}`], external: true, half };
}

/** The external data file, piece by piece (the zeros between aligned pieces included). */
async function writePieces(path: string, pieces: ExternalPiece[], size: number): Promise<void> {
  const handle = await open(path, 'w');
  try {
    for (const { offset, bytes } of pieces) await handle.write(bytes, 0, bytes.length, offset);
    await handle.truncate(size);
  } finally {
    await handle.close();
  }
}

async function writeCommonFiles(spec: ModelSpec, vocab: string[], dir: string, config: object): Promise<string[]> {
  const files: Record<string, string> = {
    'config.json': json(config),
    'generation_config.json': json({ bos_token_id: BOS_ID, eos_token_id: spec.stopsAtEndTokens === false ? [] : EOS_IDS, pad_token_id: PAD_ID }),
    'tokenizer.json': json(tokenizerJson(vocab)),
    'tokenizer_config.json': json(tokenizerConfigJson(vocab, spec.maxPositionEmbeddings)),
  };
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content);
  return Object.keys(files);
}

const ARCHITECTURES = { llama: 'LlamaForCausalLM', qwen2: 'Qwen2ForCausalLM', qwen3: 'Qwen3ForCausalLM' } as const;

function configJson(spec: ModelSpec, vocabSize: number, graphs: WrittenGraph[], dtype: string, hubId?: string): object {
  const modelType = spec.modelType ?? 'llama';
  const external = graphs.filter((g) => g.external).map((g) => [g.graphFile, 1]);
  const halfFiles = graphs.filter((g) => g.half).map((g) => [g.graphFile === 'model_fp16.onnx' ? 'fp16' : 'q4f16', 'float16']);
  return {
    ...(hubId ? { _name_or_path: hubId } : {}),
    architectures: [ARCHITECTURES[modelType]],
    model_type: modelType,
    vocab_size: vocabSize,
    hidden_size: spec.hiddenSize,
    intermediate_size: spec.intermediateSize,
    num_hidden_layers: spec.numLayers,
    num_attention_heads: spec.numHeads,
    num_key_value_heads: spec.numKvHeads,
    head_dim: spec.headDim,
    hidden_act: 'silu',
    max_position_embeddings: spec.maxPositionEmbeddings,
    rms_norm_eps: spec.rmsNormEps,
    rope_theta: spec.ropeTheta,
    rope_scaling: spec.ropeScaling ?? null,
    attention_bias: spec.qkvBias === true,
    attention_dropout: 0,
    mlp_bias: false,
    tie_word_embeddings: spec.tieWordEmbeddings,
    bos_token_id: BOS_ID,
    eos_token_id: EOS_IDS,
    pad_token_id: PAD_ID,
    torch_dtype: 'float32',
    use_cache: true,
    'transformers.js_config': {
      dtype,
      ...(external.length > 0 ? { use_external_data_format: Object.fromEntries(external) } : {}),
      ...(halfFiles.length > 0 ? { kv_cache_dtype: Object.fromEntries(halfFiles) } : {}),
    },
  };
}

function json(value: object): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
