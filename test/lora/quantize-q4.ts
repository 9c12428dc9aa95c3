/** Weights quantized to 4-bit blocks in onnxruntime's MatMulNBits layout, as a 4-bit export would hold them. */
import type { Q4Matrix } from '../../lib/weights/decoder.js';

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
