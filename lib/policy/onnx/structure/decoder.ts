/**
 * A Llama-family decoder as found in an ONNX graph (find-decoder.ts): its shape, and every weight
 * in MatMul layout [in, out] row-major, whatever layout, name or storage type the export used.
 * The same shape as the training engines' DecoderWeights (lib/weights/decoder.ts), so either reads it.
 */
import type { Llama3RopeScaling } from './rope.js';

export const PROJECTIONS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type ProjectionName = (typeof PROJECTIONS)[number];

export interface FoundShape {
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  /** Fewer than numHeads: grouped-query attention (consecutive query heads share a key/value head). */
  numKvHeads: number;
  headDim: number;
  ropeTheta: number;
  /** config.json's Llama 3 rotary scaling; absent for plain rotary. */
  ropeScaling?: Llama3RopeScaling;
  rmsNormEps: number;
}

/** 4-bit blocks as MatMulNBits stores them ([N, blocks, blockSize / 2], scales [N * blocks]). */
export interface FoundQ4 {
  kind: 'q4';
  /** Rows of the MatMul's [K, N] weight (the projection's inDim). */
  K: number;
  /** Columns (outDim). */
  N: number;
  blockSize: number;
  packed: Uint8Array;
  scales: Float32Array;
  zeroPoints?: Uint8Array;
}

/**
 * An fp16 weight kept at 16 bits (`findDecoder`'s `keepHalf`): [K, N] row-major in MatMul layout,
 * the IEEE half-precision bits as stored. The training graphs widen it one layer run at a time.
 */
export interface FoundHalf {
  kind: 'float16';
  K: number;
  N: number;
  bits: Uint16Array;
}

export interface FoundProjection {
  inDim: number;
  outDim: number;
  weight: Float32Array | FoundQ4 | FoundHalf;
  bias?: Float32Array;
  half?: 'float16' | 'bfloat16';
  /** The initializer the weight was read from. */
  initializer?: string;
  /** Where it sits in the graph: the activation it reads and its output (after the bias). */
  site?: { input: string; output: string };
}

export interface FoundLayer {
  inputNorm: Float32Array;
  q_proj: FoundProjection;
  k_proj: FoundProjection;
  v_proj: FoundProjection;
  o_proj: FoundProjection;
  qNorm?: Float32Array;
  kNorm?: Float32Array;
  postNorm: Float32Array;
  gate_proj: FoundProjection;
  up_proj: FoundProjection;
  down_proj: FoundProjection;
}

/** How the export computes attention, which the structure walk recognised. */
export type AttentionStyle = 'decomposed' | 'GroupQueryAttention';

export interface FoundDecoder {
  shape: FoundShape;
  embedding: Float32Array;
  layers: FoundLayer[];
  finalNorm: Float32Array;
  /** Absent when the head reads the embedding (tied). */
  lmHead?: Float32Array;
  embeddingHalf?: 'float16' | 'bfloat16';
  lmHeadHalf?: 'float16' | 'bfloat16';
  attention: AttentionStyle;
}
