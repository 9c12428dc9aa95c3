/**
 * 4-bit block-quantized weights as onnxruntime's `MatMulNBits` stores them (bits = 4), used without
 * ever widening the whole matrix: each output column's K weights are dequantized into one scratch
 * row when a product needs them, and dropped after (QLoRA-style: the frozen base stays 4-bit).
 *
 *   packed      [N, blocks, blockSize / 2]  two 4-bit values a byte, the lower k in the low nibble
 *   scales      [N * blocks]
 *   zeroPoints  [N, ceil(blocks / 2)]       4-bit, low nibble first; absent: 8
 *   W[k, n] = (q[n, k] - zero[n, k / blockSize]) * scale[n, k / blockSize]
 */
import type { FoundQ4 } from '../policy/onnx/structure/decoder.js';
/** A buffer of activations or gradients (kernels.ts sums in float64 over either). */
type Vec = Float32Array | Float64Array;

/** A 4-bit weight as MatMulNBits stores it (found in the graph by lib/policy/onnx/structure). */
export type Q4Matrix = FoundQ4;

/** Column n of W, K values, into `row`. */
export function dequantizeColumn(q: Q4Matrix, n: number, row: Float64Array): void {
  const blocks = Math.ceil(q.K / q.blockSize);
  const blob = q.blockSize / 2;
  const zpStride = Math.ceil(blocks / 2);
  for (let b = 0; b < blocks; b++) {
    const scale = q.scales[n * blocks + b];
    const zp = q.zeroPoints ? (q.zeroPoints[n * zpStride + (b >> 1)] >> ((b & 1) * 4)) & 0xf : 8;
    const base = (n * blocks + b) * blob;
    const k0 = b * q.blockSize;
    const end = Math.min(q.blockSize, q.K - k0);
    for (let i = 0; i < end; i++) {
      const byte = q.packed[base + (i >> 1)];
      const value = i & 1 ? byte >> 4 : byte & 0xf;
      row[k0 + i] = (value - zp) * scale;
    }
  }
}

/** y[rows, N] += x[rows, K] W: one dequantized column at a time, dotted with four rows of x. */
export function q4MatmulAdd(x: Vec, rows: number, q: Q4Matrix, y: Vec): void {
  const { K, N } = q;
  const col = new Float64Array(K);
  for (let n = 0; n < N; n++) {
    dequantizeColumn(q, n, col);
    let t = 0;
    for (; t + 4 <= rows; t += 4) {
      const x0 = t * K;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let k = 0; k < K; k++) {
        const w = col[k];
        s0 += x[x0 + k] * w;
        s1 += x[x0 + K + k] * w;
        s2 += x[x0 + 2 * K + k] * w;
        s3 += x[x0 + 3 * K + k] * w;
      }
      y[t * N + n] += s0;
      y[(t + 1) * N + n] += s1;
      y[(t + 2) * N + n] += s2;
      y[(t + 3) * N + n] += s3;
    }
    for (; t < rows; t++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += x[t * K + k] * col[k];
      y[t * N + n] += s;
    }
  }
}

/** dx[rows, K] += dy[rows, N] W^T. */
export function q4MatmulTransposedAdd(dy: Vec, rows: number, q: Q4Matrix, dx: Vec): void {
  const { K, N } = q;
  const col = new Float64Array(K);
  for (let n = 0; n < N; n++) {
    dequantizeColumn(q, n, col);
    for (let t = 0; t < rows; t++) {
      const g = dy[t * N + n];
      if (g === 0) continue;
      const o = t * K;
      for (let k = 0; k < K; k++) dx[o + k] += g * col[k];
    }
  }
}
