/**
 * Random-weight models in the exact shapes of the hub's small instruct models (the values of their
 * published config.json files), to measure and test webgrpo on what its users bring without
 * downloading anything. Each is built, in the hub's layout, into `build/models/hub/<name>/`
 * (gitignored): Optimum's tensor names, `onnx/model.onnx` with its weights in
 * `onnx/model.onnx_data`, `model_fp16.onnx` (float16 throughout), `model_q4.onnx` and
 * `model_q4f16.onnx` (MatMulNBits, float16 scales and activations). The vocabulary is the
 * builder's character tokenizer padded with reserved tokens to the model's size, so the
 * embedding and head have the real shape.
 */
import { BASE_VOCAB_SIZE } from './tokenizer.js';
import type { ModelSpec } from './spec.js';

/** A hub model's shape, and where its config values come from. */
export interface HubShape {
  /** The model these weights stand in for. */
  hubId: string;
  spec: ModelSpec;
}

const common = { names: 'exporter', tieWordEmbeddings: true } as const;
const vocab = (size: number) => size - BASE_VOCAB_SIZE;

export const HUB_SHAPES = {
  'smollm2-135m': {
    hubId: 'HuggingFaceTB/SmolLM2-135M-Instruct',
    spec: { ...common, seed: 41135, hiddenSize: 576, intermediateSize: 1536, numLayers: 30, numHeads: 9, numKvHeads: 3, headDim: 64, reservedTokens: vocab(49152), ropeTheta: 100000, rmsNormEps: 1e-5, maxPositionEmbeddings: 8192 },
  },
  'smollm2-360m': {
    hubId: 'HuggingFaceTB/SmolLM2-360M-Instruct',
    spec: { ...common, seed: 41360, hiddenSize: 960, intermediateSize: 2560, numLayers: 32, numHeads: 15, numKvHeads: 5, headDim: 64, reservedTokens: vocab(49152), ropeTheta: 100000, rmsNormEps: 1e-5, maxPositionEmbeddings: 8192 },
  },
  'qwen2.5-0.5b': {
    hubId: 'Qwen/Qwen2.5-0.5B-Instruct',
    spec: { ...common, seed: 41500, modelType: 'qwen2', hiddenSize: 896, intermediateSize: 4864, numLayers: 24, numHeads: 14, numKvHeads: 2, headDim: 64, reservedTokens: vocab(151936), ropeTheta: 1000000, rmsNormEps: 1e-6, maxPositionEmbeddings: 32768, qkvBias: true },
  },
  'qwen3-0.6b': {
    hubId: 'Qwen/Qwen3-0.6B',
    spec: { ...common, seed: 41600, modelType: 'qwen3', hiddenSize: 1024, intermediateSize: 3072, numLayers: 28, numHeads: 16, numKvHeads: 8, headDim: 128, reservedTokens: vocab(151936), ropeTheta: 1000000, rmsNormEps: 1e-6, maxPositionEmbeddings: 40960, qkNorm: true },
  },
  'llama-3.2-1b': {
    hubId: 'meta-llama/Llama-3.2-1B-Instruct',
    spec: {
      ...common, seed: 41001, hiddenSize: 2048, intermediateSize: 8192, numLayers: 16, numHeads: 32, numKvHeads: 8, headDim: 64, reservedTokens: vocab(128256), ropeTheta: 500000, rmsNormEps: 1e-5, maxPositionEmbeddings: 131072,
      ropeScaling: { rope_type: 'llama3', factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 },
    },
  },
} satisfies Record<string, HubShape>;

export type HubName = keyof typeof HUB_SHAPES;

/** The weight files of a hub folder. */
export const HUB_DTYPES = ['fp32', 'fp16', 'q4', 'q4f16'] as const;
export type HubDtype = (typeof HUB_DTYPES)[number];

/** A graph file must stay under protobuf's 2 GB; the hub's exports move the weights out well before. */
const INLINE_LIMIT = 1.8e9;

/**
 * The spec of one dtype's file in the hub's layout: fp32 with external data (as onnx-community
 * stores `model.onnx`), the others inline unless their weights would pass the protobuf limit;
 * fp16 and q4f16 compute in float16 (float16 cache, `kv_cache_dtype`).
 */
export function hubSpec(spec: ModelSpec, dtype: HubDtype, vocabSize: number): ModelSpec {
  return { ...spec, weights: dtype, ...(dtype === 'fp16' ? { halfActivations: true } : {}), externalData: dtype === 'fp32' || fileBytes(spec, dtype, vocabSize) > INLINE_LIMIT };
}

/**
 * About the bytes of a dtype's weights: 4-bit projections take half a byte per weight plus a
 * scale per block of 32 (float32 in q4, float16 in q4f16); the embedding (and the tied head that
 * reads it) stays float32 in q4 and float16 in q4f16, as the hub's quantizer leaves Gather alone.
 */
function fileBytes(spec: ModelSpec, dtype: HubDtype, vocabSize: number): number {
  const parameters = parameterCount(spec, vocabSize);
  if (dtype === 'fp32' || dtype === 'fp16') return parameters * (dtype === 'fp32' ? 4 : 2);
  const embedding = vocabSize * spec.hiddenSize * (spec.tieWordEmbeddings ? 1 : 2);
  const floatBytes = dtype === 'q4' ? 4 : 2;
  return embedding * floatBytes + (parameters - embedding) * (0.5 + floatBytes / 32);
}

/** The parameters of a spec's weights (the tied head counted once). */
export function parameterCount(spec: ModelSpec, vocabSize: number): number {
  const { hiddenSize: h, intermediateSize: f, numHeads, numKvHeads, headDim: d } = spec;
  const attention = h * numHeads * d * 2 + h * numKvHeads * d * 2 + (spec.qkvBias ? (numHeads + 2 * numKvHeads) * d : 0) + (spec.qkNorm ? 2 * d : 0);
  const layer = attention + 3 * h * f + 2 * h;
  return vocabSize * h * (spec.tieWordEmbeddings ? 1 : 2) + spec.numLayers * layer + h;
}
