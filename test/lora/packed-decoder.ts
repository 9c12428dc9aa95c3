/**
 * 16-bit and 4-bit versions of a decoder's weights, as an fp16, bf16 or MatMulNBits export would
 * hold them: every matrix rounded to 16 bits and marked (the reader's `half`), or every layer
 * projection quantized to 4-bit blocks (onnxruntime's MatMulNBits layout, lib/lora/q4.ts).
 */
import { bfloat16ToFloat, floatToHalf, halfToFloat } from '../../lib/lora/half.js';
import type { Q4Matrix } from '../../lib/lora/q4.js';
import { LORA_MODULES, type DecoderWeights, type HalfType } from '../../lib/lora/weights.js';

/**
 * 4-bit quantization of W [K, N] per column in blocks of K: asymmetric with zero points, or
 * symmetric around 8 (what MatMulNBits assumes without zero points).
 */
export function quantizeQ4(w: Float32Array, K: number, N: number, blockSize: number, withZeros = true): Q4Matrix {
  const blocks = Math.ceil(K / blockSize);
  const packed = new Uint8Array(N * blocks * (blockSize / 2));
  const scales = new Float32Array(N * blocks);
  const zeros = new Uint8Array(N * Math.ceil(blocks / 2));
  for (let n = 0; n < N; n++) {
    for (let b = 0; b < blocks; b++) {
      let lo = 0;
      let hi = 0;
      for (let i = 0; i < blockSize && b * blockSize + i < K; i++) {
        const v = w[(b * blockSize + i) * N + n];
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
      const scale = withZeros ? Math.fround((hi - lo) / 15 || 1) : Math.fround(Math.max(hi, -lo) / 7 || 1);
      const zero = withZeros ? Math.min(15, Math.max(0, Math.round(-lo / scale))) : 8;
      scales[n * blocks + b] = scale;
      zeros[n * Math.ceil(blocks / 2) + (b >> 1)] |= zero << ((b & 1) * 4);
      for (let i = 0; i < blockSize && b * blockSize + i < K; i++) {
        const q = Math.min(15, Math.max(0, Math.round(w[(b * blockSize + i) * N + n] / scale) + zero));
        packed[(n * blocks + b) * (blockSize / 2) + (i >> 1)] |= q << ((i & 1) * 4);
      }
    }
  }
  return { kind: 'q4', K, N, blockSize, packed, scales, ...(withZeros ? { zeroPoints: zeros } : {}) };
}

/** Every layer projection 4-bit; the embedding, head and norms stay float32. */
export function q4Decoder(weights: DecoderWeights, blockSize: number, withZeros = true): DecoderWeights {
  return {
    ...weights,
    layers: weights.layers.map((layer) => {
      const out = { ...layer };
      for (const m of LORA_MODULES) {
        const p = layer[m];
        out[m] = { ...p, weight: quantizeQ4(p.weight as Float32Array, p.inDim, p.outDim, blockSize, withZeros) };
      }
      return out;
    }),
  };
}

/** The values nearest to `x` that the 16-bit type holds. */
export function roundTo(type: HalfType, x: Float32Array): Float32Array {
  if (type === 'float16') return x.map((v) => halfToFloat(floatToHalf(v)));
  const bits = new Uint32Array(x.buffer, x.byteOffset, x.length);
  // Round to nearest, ties to even, on the upper 16 bits (finite values only here).
  return Float32Array.from(bits, (b) => bfloat16ToFloat(((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff));
}

/** Every matrix (projections, embedding, untied head) at 16 bits, marked as read from 16-bit initializers. */
export function halfDecoder(weights: DecoderWeights, type: HalfType): DecoderWeights {
  return {
    ...weights,
    embedding: roundTo(type, weights.embedding),
    embeddingHalf: type,
    ...(weights.lmHead ? { lmHead: roundTo(type, weights.lmHead), lmHeadHalf: type } : {}),
    layers: weights.layers.map((layer) => {
      const out = { ...layer };
      for (const m of LORA_MODULES) out[m] = { ...layer[m], weight: roundTo(type, layer[m].weight as Float32Array), half: type };
      return out;
    }),
  };
}
