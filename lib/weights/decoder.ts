/**
 * The frozen base model a LoRA adapter trains on: a Llama-family decoder (Llama, Qwen2, Qwen3,
 * SmolLM, Mistral-style) as plain arrays. Projection weights keep the ONNX MatMul layout
 * [in, out] row-major (PyTorch's Linear weight transposed), so the weights an export stores are
 * used as they are, with no transposed copy.
 */

/** The seven projections of a decoder layer that LoRA can target (PEFT's module names). */
export const LORA_MODULES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type LoraModule = (typeof LORA_MODULES)[number];

/** Where a module sits in the layer, as PEFT's tensor names spell it (`self_attn.q_proj`). */
export const MODULE_PARENT: Record<LoraModule, 'self_attn' | 'mlp'> = {
  q_proj: 'self_attn',
  k_proj: 'self_attn',
  v_proj: 'self_attn',
  o_proj: 'self_attn',
  gate_proj: 'mlp',
  up_proj: 'mlp',
  down_proj: 'mlp',
};

/** The decoder's dimensions, as found in its ONNX graph (lib/policy/onnx/structure). */
export type DecoderShape = FoundShape;

import type { FoundHalf, FoundQ4, FoundShape } from '../policy/onnx/structure/decoder.js';
import { halfToFloat } from '../policy/onnx/half.js';

/** A 4-bit weight as onnxruntime's MatMulNBits stores it (found in the graph by lib/policy/onnx/structure). */
export type Q4Matrix = FoundQ4;

/** An fp16 weight kept as its 16-bit values (what `loraModel` reads an fp16 export's projections as). */
export type HalfMatrix = FoundHalf;

/** A float projection weight as float32 (an fp16 one widened exactly), or undefined for 4-bit blocks. */
export function floatWeight(weight: Projection['weight']): Float32Array | undefined {
  if (weight instanceof Float32Array) return weight;
  return weight.kind === 'float16' ? Float32Array.from(weight.bits, halfToFloat) : undefined;
}

/**
 * The 16-bit float type a weight was stored in by the export. The Float32Array holds it widened
 * exactly, and a merge (onnx-merge.ts) writes the adapted weight back in this type.
 */
export type HalfType = 'float16' | 'bfloat16';

/** A frozen projection y = x W (+ bias); W is [inDim, outDim] row-major in float32 or fp16 (HalfMatrix), or 4-bit blocks (Q4Matrix). */
export interface Projection {
  inDim: number;
  outDim: number;
  weight: Float32Array | Q4Matrix | HalfMatrix;
  bias?: Float32Array;
  /** Set when the weight was read from a 16-bit initializer (widened to float32, or kept as a HalfMatrix). */
  half?: HalfType;
  /** The ONNX initializer the weight was read from (what a merge rewrites). */
  initializer?: string;
}

export interface DecoderLayerWeights {
  inputNorm: Float32Array;
  q_proj: Projection;
  k_proj: Projection;
  v_proj: Projection;
  o_proj: Projection;
  /** Qwen3: RMSNorm over each head's query and key before the rotary embedding. */
  qNorm?: Float32Array;
  kNorm?: Float32Array;
  postNorm: Float32Array;
  gate_proj: Projection;
  up_proj: Projection;
  down_proj: Projection;
}

export interface DecoderWeights {
  shape: DecoderShape;
  /** [vocab, hidden]. */
  embedding: Float32Array;
  layers: DecoderLayerWeights[];
  finalNorm: Float32Array;
  /** Untied head [hidden, vocab]; absent when the head reads the embedding (tied). */
  lmHead?: Float32Array;
  /** Set when the embedding or the untied head was read from a 16-bit initializer. */
  embeddingHalf?: HalfType;
  lmHeadHalf?: HalfType;
}

/** The [inDim, outDim] of each module in a layer of this shape. */
export function moduleDims(shape: DecoderShape, module: LoraModule): { inDim: number; outDim: number } {
  const { hiddenSize: h, intermediateSize: f, numHeads, numKvHeads, headDim } = shape;
  switch (module) {
    case 'q_proj':
      return { inDim: h, outDim: numHeads * headDim };
    case 'k_proj':
    case 'v_proj':
      return { inDim: h, outDim: numKvHeads * headDim };
    case 'o_proj':
      return { inDim: numHeads * headDim, outDim: h };
    case 'gate_proj':
    case 'up_proj':
      return { inDim: h, outDim: f };
    case 'down_proj':
      return { inDim: f, outDim: h };
  }
}
