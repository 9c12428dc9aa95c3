/**
 * Writes a complete transformers.js model folder for a `ModelSpec`:
 *
 *   config.json, generation_config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx
 *
 * `onnx/model.onnx` is the fp32 file transformers.js looks for (`subfolder: 'onnx'`, no dtype
 * suffix); `transformers.js_config.dtype = 'fp32'` keeps its WASM default (q8, which would look for
 * `model_quantized.onnx`) from asking for files that do not exist.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildGenaiGraph } from './genai.js';
import { buildLlamaGraph } from './llama.js';
import { validateSpec, type ModelSpec, type PresetName } from './spec.js';
import { BOS_ID, EOS_IDS, PAD_ID, tokenizerConfigJson, tokenizerJson, vocabulary } from './tokenizer.js';
import { initWeights, type Weights } from './weights.js';

export { BENCH, PRESETS, TINY, type ModelSpec, type PresetName } from './spec.js';

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

/** The file transformers.js looks for under `onnx/` for each dtype. */
export const MODEL_FILES = { fp32: 'onnx/model.onnx', fp16: 'onnx/model_fp16.onnx', q4: 'onnx/model_q4.onnx' } as const;

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
  const onnx = spec.graph === 'genai' ? buildGenaiGraph(spec, weights, vocab.length) : buildLlamaGraph(spec, weights, vocab.length);

  const files: Record<string, string | Uint8Array> = {
    'config.json': json(configJson(spec, vocab.length)),
    'generation_config.json': json({ bos_token_id: BOS_ID, eos_token_id: spec.stopsAtEndTokens === false ? [] : EOS_IDS, pad_token_id: PAD_ID }),
    'tokenizer.json': json(tokenizerJson(vocab)),
    'tokenizer_config.json': json(tokenizerConfigJson(vocab, spec.maxPositionEmbeddings)),
    [MODEL_FILES[spec.weights ?? 'fp32']]: onnx,
  };
  await mkdir(join(dir, 'onnx'), { recursive: true });
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content);

  const parameters =
    weights.embedTokens.length +
    weights.finalNorm.length +
    (weights.lmHead?.length ?? 0) +
    weights.layers.reduce((sum, layer) => sum + Object.values(layer).reduce((s, w: Float32Array) => s + w.length, 0), 0);
  return { dir, files: Object.keys(files), parameters, vocabSize: vocab.length };
}

function configJson(spec: ModelSpec, vocabSize: number): object {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
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
    rope_scaling: null,
    attention_bias: spec.qkvBias === true,
    attention_dropout: 0,
    mlp_bias: false,
    tie_word_embeddings: spec.tieWordEmbeddings,
    bos_token_id: BOS_ID,
    eos_token_id: EOS_IDS,
    pad_token_id: PAD_ID,
    torch_dtype: 'float32',
    use_cache: true,
    'transformers.js_config': { dtype: spec.weights ?? 'fp32' },
  };
}

function json(value: object): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
