/**
 * WGSL that reads the frozen base matrices in the format they are stored on the GPU
 * (frozen-matrix.ts), dequantizing each element where a kernel loads it, so a 16-bit or 4-bit
 * model never has a float32 copy on the device:
 *
 *   f16    two IEEE halves a u32, the lower index in the low half (unpack2x16float, core WGSL:
 *          no shader-f16 feature needed)
 *   bf16   two bfloat16 a u32, widened by moving the 16 bits to the top of a float32
 *   q4     MatMulNBits' layout (lib/lora/q4.ts): column n's K nibbles in blocks, eight a u32,
 *          the lower k in the lower nibble; float32 scales per (n, block); 4-bit zero points,
 *          two a byte, or 8 when the export has none
 *
 * Every format defines `weight(k, n)`, W[k, n] of the [rows, cols] matrix. The matmul takes W or
 * W^T as its B operand (u5 = 1: transposed, for dy W^T and the tied head), the rest of Params
 * as the float32 matmul (kernels.ts): u0 M, u1 N, u2 K, u3 and u4 A's strides, u7 accumulate,
 * f0 alpha; u6 W's cols; q4 also u8 block size, u9 blocks per column, u10 1 with zero points.
 */
import { ELEMENTWISE, tiledMatmul } from './kernels.js';

export type HalfFormat = 'f16' | 'bf16';
export type FrozenFormat = 'f32' | HalfFormat | 'q4';

const HALF_WEIGHT: Record<HalfFormat, string> = {
  f16: /* wgsl */ `
fn element(e: u32) -> f32 { return unpack2x16float(w[e >> 1u])[e & 1u]; }`,
  bf16: /* wgsl */ `
fn element(e: u32) -> f32 {
  let word = w[e >> 1u];
  if ((e & 1u) == 1u) { return bitcast<f32>(word & 0xffff0000u); }
  return bitcast<f32>(word << 16u);
}`,
};

const Q4_WEIGHT = /* wgsl */ `
fn weight(k: u32, n: u32) -> f32 {
  let nibble = n * p.u9 * p.u8 + k;
  let q = (packed[nibble >> 3u] >> ((nibble & 7u) * 4u)) & 15u;
  let b = k / p.u8;
  var zero = 8u;
  if (p.u10 != 0u) {
    let at = n * ((p.u9 + 1u) / 2u) + (b >> 1u);
    zero = (zeros[at >> 2u] >> ((at & 3u) * 8u + (b & 1u) * 4u)) & 15u;
  }
  return (f32(q) - f32(zero)) * scales[n * p.u9 + b];
}`;

const LOAD_B = /* wgsl */ `
fn loadB(kb: u32, col: u32) -> f32 {
  if (p.u5 != 0u) { return weight(col, kb); }
  return weight(kb, col);
}`;

const OUT = '@group(0) @binding(2) var<storage, read_write> c: array<f32>;';

/** C = alpha A op(W) (+ C) over a 16-bit W: buffers a, c, w. */
export const matmulHalf = (format: HalfFormat) =>
  tiledMatmul(
    `${OUT}
@group(0) @binding(3) var<storage, read> w: array<u32>;`,
    `${HALF_WEIGHT[format]}
fn weight(k: u32, n: u32) -> f32 { return element(k * p.u6 + n); }
${LOAD_B}`,
    'loadB(kb, col)',
  );

/** C = alpha A op(W) (+ C) over a 4-bit W: buffers a, c, packed, scales, zeros (a placeholder without zero points). */
export const MATMUL_Q4 = tiledMatmul(
  `${OUT}
@group(0) @binding(3) var<storage, read> packed: array<u32>;
@group(0) @binding(4) var<storage, read> scales: array<f32>;
@group(0) @binding(5) var<storage, read> zeros: array<u32>;`,
  `${Q4_WEIGHT}
${LOAD_B}`,
  'loadB(kb, col)',
);

/** The embedding lookup from a 16-bit table: u0 output rows, u1 row width; buffers w, index, dst. */
export const gatherHalf = (format: HalfFormat) =>
  ELEMENTWISE(
    `@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;
${HALF_WEIGHT[format]}`,
    `if (i >= p.u0 * p.u1) { return; }
  dst[i] = element(index[i / p.u1] * p.u1 + i % p.u1);`,
  );
