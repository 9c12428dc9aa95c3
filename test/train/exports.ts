/**
 * Small exports of every style, built in memory by the project's model builder and named as the
 * real tools name them: the graph bytes, the weights they were written from, and config.json.
 */
import { buildGenaiGraph } from '../../scripts/build-model/genai.js';
import { buildLlamaGraph } from '../../scripts/build-model/llama.js';
import type { ModelSpec } from '../../scripts/build-model/spec.js';
import { vocabulary } from '../../scripts/build-model/tokenizer.js';
import { initWeights, type Weights } from '../../scripts/build-model/weights.js';

export interface Export {
  spec: ModelSpec;
  graph: Uint8Array;
  weights: Weights;
  vocabSize: number;
  config: Record<string, unknown>;
}

/** Grouped-query (4 query heads on 2 kv heads), head dim 16, 2 layers: small, and every part present. */
export const SMALL: ModelSpec = {
  seed: 7,
  hiddenSize: 64,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  intermediateSize: 96,
  tieWordEmbeddings: true,
  reservedTokens: 0,
  ropeTheta: 10000,
  rmsNormEps: 1e-5,
  maxPositionEmbeddings: 256,
};

export function buildExport(overrides: Partial<ModelSpec>): Export {
  const spec = { ...SMALL, ...overrides };
  const vocabSize = vocabulary(spec.reservedTokens).length;
  const weights = initWeights(spec, vocabSize);
  const graph = spec.graph === 'genai' ? buildGenaiGraph(spec, weights, vocabSize) : buildLlamaGraph(spec, weights, vocabSize);
  const config = {
    vocab_size: vocabSize,
    hidden_size: spec.hiddenSize,
    intermediate_size: spec.intermediateSize,
    num_hidden_layers: spec.numLayers,
    num_attention_heads: spec.numHeads,
    num_key_value_heads: spec.numKvHeads,
    head_dim: spec.headDim,
    rope_theta: spec.ropeTheta,
    rms_norm_eps: spec.rmsNormEps,
    rope_scaling: null,
    tie_word_embeddings: spec.tieWordEmbeddings,
  };
  return { spec, graph, weights, vocabSize, config };
}

/** The export styles the finder must read: [label, spec overrides]. */
export const STYLES: Array<[string, Partial<ModelSpec>]> = [
  ["webgrpo's builder (Optimum I/O, module-named weights)", {}],
  ['Optimum / transformers.js (anonymous onnx::MatMul weights, untied head, q/k/v biases)', { names: 'exporter', tieWordEmbeddings: false, qkvBias: true }],
  ["onnxruntime-genai (attn, final_norm_layernorm, GroupQueryAttention)", { names: 'exporter', graph: 'genai' }],
  ['Optimum, Qwen3-style per-head q/k norms, multi-query', { names: 'exporter', qkNorm: true, numKvHeads: 1 }],
  ['onnxruntime-genai with q/k norms, biases and an untied head', { names: 'exporter', graph: 'genai', qkNorm: true, qkvBias: true, tieWordEmbeddings: false }],
  ['Optimum in fp16', { names: 'exporter', weights: 'fp16' }],
  ['onnxruntime-genai in fp16', { names: 'exporter', graph: 'genai', weights: 'fp16' }],
  ['Optimum in 4-bit MatMulNBits', { names: 'exporter', weights: 'q4' }],
  ['onnxruntime-genai in 4-bit MatMulNBits', { names: 'exporter', graph: 'genai', weights: 'q4' }],
];
