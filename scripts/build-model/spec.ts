import type { Llama3RopeScaling } from '../../lib/policy/onnx/structure/rope.js';
import { BASE_VOCAB_SIZE } from './tokenizer.js';

/** The shape of a generated Llama-architecture model; every field ends up in `config.json`. */
export interface ModelSpec {
  /** Seed of the weights; the same spec gives byte-identical files. */
  seed: number;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  /** Key/value heads; fewer than `numHeads` means grouped-query attention. */
  numKvHeads: number;
  headDim: number;
  intermediateSize: number;
  /** Share the embedding matrix with the LM head (as Llama 3.2 1B and SmolLM2 do). */
  tieWordEmbeddings: boolean;
  /**
   * Vocabulary entries beyond the printable characters, named `<|reserved_N|>` (like Llama 3's
   * reserved tokens): they decode to their name and never appear when encoding plain text. They
   * give the benchmark model a realistic output-layer size.
   */
  reservedTokens: number;
  ropeTheta: number;
  rmsNormEps: number;
  maxPositionEmbeddings: number;
  /**
   * Add the optional `num_logits_to_keep` input some exports have (0 = every position, k = the
   * last k), so a loader can skip the LM head for prompt positions it does not need.
   */
  logitsToKeepInput?: boolean;
  /**
   * false: generation_config.json lists no end token, so generation always runs to
   * max_new_tokens (the benchmark model: both sides then do exactly the same work).
   */
  stopsAtEndTokens?: boolean;
  /**
   * 'input-ids': the causal mask is built the way onnxruntime-genai's exports build it, as a square
   * [S, S] triangle from `input_ids` expanded to [B, 1, S, T]. That supports exactly the two passes
   * transformers.js runs (a prefill from an empty cache, S = T, and one new token, S = 1) and fails
   * on several new tokens on top of a cache ("invalid expand shape"). Default 'general': any pass.
   */
  causalMask?: 'general' | 'input-ids';
  /** false: no `position_ids` input; positions come from the attention mask (cumsum - 1), as some exports do. Default true. */
  positionIdsInput?: boolean;
  /** float16 cache (past/present) and logits, computed in float32 in between (the cache is rounded where it is stored). */
  halfCache?: boolean;
  /**
   * 'q4': the projections are com.microsoft MatMulNBits with 4-bit blocks of 32 (symmetric, zero
   * point 8), written to onnx/model_q4.onnx with `transformers.js_config.dtype = 'q4'`. 'fp16': every
   * parameter is stored as float16 and read through a Cast to float32 (onnx/model_fp16.onnx, dtype
   * 'fp16'), or used as it is with `halfActivations`. 'q4f16' (onnx/model_q4f16.onnx, the usual
   * WebGPU choice): MatMulNBits with float16 scales, every other parameter float16, and float16
   * activations, cache and logits. Default 'fp32'.
   */
  weights?: 'fp32' | 'fp16' | 'q4' | 'q4f16';
  /**
   * With weights 'fp16': compute in float16 (activations, cache and logits), as the hub's fp16
   * exports do, rather than widening each weight to float32. q4f16 always does. Default false.
   */
  halfActivations?: boolean;
  /**
   * Write the weights to `<file>_data` beside the graph (ONNX external data: initializers of
   * 1 KiB and more), as exports must once the weights pass 2 GB and the hub's onnx-community
   * folders do for `model.onnx`; config.json's `transformers.js_config.use_external_data_format`
   * names the file. Default false.
   */
  externalData?: boolean;
  /** Llama 3's rotary scaling (config.json's `rope_scaling`), applied to the graph's frequencies. */
  ropeScaling?: Llama3RopeScaling;
  /** config.json's model_type and architecture (the graph is the same): default 'llama'. */
  modelType?: 'llama' | 'qwen2' | 'qwen3';
  /**
   * 'exporter': tensors and nodes named as the real tool names them: Optimum (torch.onnx) gives the
   * projection weights anonymous `onnx::MatMul_N` initializers and names nodes after their module
   * (`/model/layers.0/self_attn/q_proj/MatMul`); onnxruntime-genai names attention `attn`
   * (`model.layers.0.attn.q_proj.MatMul.weight`) and the final norm
   * `model.layers.N.final_norm_layernorm.weight`. Default 'webgrpo': `model.layers.0.self_attn.q_proj.weight`
   * and `model.norm.weight` in both graphs.
   */
  names?: 'webgrpo' | 'exporter';
  /** Qwen2: biases on the q, k and v projections. */
  qkvBias?: boolean;
  /** Qwen3: a per-head RMSNorm on the queries and keys before the rotary embedding. */
  qkNorm?: boolean;
  /**
   * 'genai': the graph onnxruntime-genai's model builder writes (genai.ts: GroupQueryAttention with
   * rotary inside, SkipSimplifiedLayerNormalization, no position_ids); the options above that shape
   * the Optimum-style graph do not apply. Default 'optimum'.
   */
  graph?: 'optimum' | 'genai';
}

/** Committed to `public/models/webgrpo-tiny/`: about 0.8M parameters, 3 MB. */
export const TINY: ModelSpec = {
  seed: 20250101,
  hiddenSize: 128,
  numLayers: 4,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 32,
  intermediateSize: 352,
  tieWordEmbeddings: true,
  reservedTokens: 0,
  ropeTheta: 10000,
  rmsNormEps: 1e-5,
  maxPositionEmbeddings: 2048,
};

/** Generated on demand into `build/models/webgrpo-bench/` (gitignored): about 28M parameters. */
export const BENCH: ModelSpec = {
  seed: 20250102,
  hiddenSize: 512,
  numLayers: 8,
  numHeads: 8,
  numKvHeads: 2,
  headDim: 64,
  intermediateSize: 1536,
  tieWordEmbeddings: true,
  reservedTokens: 8192 - BASE_VOCAB_SIZE,
  ropeTheta: 500000,
  rmsNormEps: 1e-5,
  maxPositionEmbeddings: 4096,
  stopsAtEndTokens: false,
};

export const PRESETS = { tiny: TINY, bench: BENCH } as const;
export type PresetName = keyof typeof PRESETS;

export function validateSpec(spec: ModelSpec): void {
  const positive = ['hiddenSize', 'numLayers', 'numHeads', 'numKvHeads', 'headDim', 'intermediateSize', 'maxPositionEmbeddings'] as const;
  for (const key of positive) {
    if (!Number.isInteger(spec[key]) || spec[key] <= 0) throw new RangeError(`${key} must be a positive integer, got ${spec[key]}`);
  }
  if (spec.numHeads % spec.numKvHeads !== 0) throw new RangeError('numHeads must be a multiple of numKvHeads');
  if (spec.headDim % 2 !== 0) throw new RangeError('headDim must be even (rotary embeddings rotate pairs)');
  if (!Number.isInteger(spec.reservedTokens) || spec.reservedTokens < 0) throw new RangeError('reservedTokens must be >= 0');
  if (spec.graph === 'genai' && (spec.weights === 'q4f16' || spec.halfActivations)) throw new RangeError('the genai graph is built with float32 activations only');
  if (spec.halfActivations && spec.weights !== 'fp16' && spec.weights !== 'q4f16') throw new RangeError("halfActivations needs weights 'fp16' (q4f16 always computes in float16)");
}
