/**
 * The frozen base matrices on the GPU in the format the export stores them (frozen-kernels.ts):
 * float32; IEEE half or bfloat16 when the weights were read from 16-bit initializers (the
 * Float32Array holds them widened exactly, so they narrow back with no loss, two a u32); 4-bit
 * MatMulNBits blocks as they are. A matmul or lookup over one dequantizes in the kernel, so a
 * fp16 model takes half the device memory of its float32 copy, and 4-bit projections (block 32)
 * about a sixth of theirs.
 *
 * A matrix marked 16-bit whose values no longer all fit 16 bits (weights changed after reading)
 * is uploaded as float32: the numbers are the weights' own, whatever the storage.
 */
import { InvalidInputError } from '../../errors.js';
import { halfToFloat } from '../half.js';
import type { Q4Matrix } from '../q4.js';
import type { HalfType } from '../weights.js';
import type { HalfFormat } from './frozen-kernels.js';
import type { GpuRecorder, Tensor } from './gpu.js';

interface Dims {
  /** W is [rows, cols] row-major (the ONNX MatMul layout [in, out], or the embedding [vocab, hidden]). */
  rows: number;
  cols: number;
}

export type FrozenMatrix =
  | (Dims & { format: 'f32' | HalfFormat; data: Tensor })
  | (Dims & { format: 'q4'; packed: Tensor; scales: Tensor; zeros?: Tensor; blockSize: number; blocks: number });

/** Every buffer of a frozen matrix. */
export function matrixTensors(m: FrozenMatrix): Tensor[] {
  return m.format === 'q4' ? [m.packed, m.scales, ...(m.zeros ? [m.zeros] : [])] : [m.data];
}

/** Uploads W in its stored format; `upload` makes a kept tensor of the given 4-byte words. */
export function uploadMatrix(upload: (data: Float32Array | Uint32Array) => Tensor, weight: Float32Array | Q4Matrix, rows: number, cols: number, half: HalfType | undefined, where: string): FrozenMatrix {
  if (!(weight instanceof Float32Array)) return uploadQ4(upload, weight, rows, cols, where);
  if (weight.length !== rows * cols) throw new InvalidInputError('weights', `${where} holds ${weight.length} values for [${rows}, ${cols}].`);
  const words = half ? halfWords(weight, half) : undefined;
  if (words && half) return { format: half === 'float16' ? 'f16' : 'bf16', rows, cols, data: upload(words) };
  return { format: 'f32', rows, cols, data: upload(weight) };
}

function uploadQ4(upload: (data: Float32Array | Uint32Array) => Tensor, q: Q4Matrix, rows: number, cols: number, where: string): FrozenMatrix {
  const { K, N, blockSize } = q;
  if (K !== rows || N !== cols) throw new InvalidInputError('weights', `${where} is 4-bit [${K}, ${N}]; the model's shape implies [${rows}, ${cols}].`);
  if (!(blockSize >= 16 && (blockSize & (blockSize - 1)) === 0)) throw new InvalidInputError('weights', `${where} has 4-bit block size ${blockSize}; a power of two >= 16 is needed.`);
  const blocks = Math.ceil(K / blockSize);
  if (q.packed.length !== (N * blocks * blockSize) / 2) throw new InvalidInputError('weights', `${where} has ${q.packed.length} packed 4-bit bytes for N ${N}, K ${K}, block ${blockSize}.`);
  if (q.scales.length !== N * blocks) throw new InvalidInputError('weights', `${where} has ${q.scales.length} scales for ${N * blocks} blocks.`);
  if (q.zeroPoints && q.zeroPoints.length !== N * Math.ceil(blocks / 2)) throw new InvalidInputError('weights', `${where} has ${q.zeroPoints.length} zero-point bytes for N ${N} and ${blocks} blocks.`);
  return {
    format: 'q4',
    rows,
    cols,
    blockSize,
    blocks,
    packed: upload(byteWords(q.packed)),
    scales: upload(q.scales),
    ...(q.zeroPoints ? { zeros: upload(byteWords(q.zeroPoints)) } : {}),
  };
}

/** Bytes as little-endian u32 words, zero-padded to a whole word (WGSL reads u32 arrays). */
function byteWords(bytes: Uint8Array): Uint32Array {
  const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  return new Uint32Array(padded.buffer);
}

let halfTable: Uint32Array | undefined;

/** The float32 bits of every IEEE half, by its 16 bits. */
function halfBits(): Uint32Array {
  if (!halfTable) {
    const table = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) table[h] = halfToFloat(h);
    halfTable = new Uint32Array(table.buffer);
  }
  return halfTable;
}

/** The IEEE half whose value is exactly the float32 with these bits, or -1 when there is none. */
function exactHalf(bits: number, table: Uint32Array): number {
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const e = exponent - 127;
  const mantissa = bits & 0x7fffff;
  let h: number;
  if (exponent === 0) h = sign;
  else if (e >= -14 && e <= 15) h = sign | ((e + 15) << 10) | (mantissa >>> 13);
  else if (e >= -24 && e < -14) h = sign | ((mantissa | 0x800000) >>> (-1 - e));
  else return -1;
  return table[h] === bits ? h : -1;
}

/** `values` as 16-bit words two a u32 (the lower index low), or undefined if one does not fit exactly. */
export function halfWords(values: Float32Array, type: HalfType): Uint32Array | undefined {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const words = new Uint32Array(Math.ceil(values.length / 2));
  const table = type === 'float16' ? halfBits() : undefined;
  for (let i = 0; i < bits.length; i++) {
    let h: number;
    if (table) h = exactHalf(bits[i], table);
    else h = (bits[i] & 0xffff) === 0 ? bits[i] >>> 16 : -1;
    if (h < 0) return undefined;
    words[i >> 1] |= h << ((i & 1) * 16);
  }
  return words;
}

/** C[M, N] = alpha A op(W) (+ C): op(W) = W, or W^T with `transposed` (dy W^T, the tied head). */
export interface FrozenMatmulShape {
  M: number;
  N: number;
  K: number;
  /** A's row and k strides. */
  sam: number;
  sak: number;
  transposed: boolean;
  alpha?: number;
  accumulate?: boolean;
}

const MATMUL_KERNEL = { f16: 'matmulF16', bf16: 'matmulBf16', q4: 'matmulQ4' } as const;

/** Records C = alpha A op(W) (+ C) reading W in its stored format. */
export function frozenMatmul(g: GpuRecorder, a: Tensor, w: FrozenMatrix, c: Tensor, s: FrozenMatmulShape): void {
  const [wRows, wCols] = s.transposed ? [s.N, s.K] : [s.K, s.N];
  if (wRows !== w.rows || wCols !== w.cols) throw new InvalidInputError('matmul', `op(W) is [${s.K}, ${s.N}]; W is [${w.rows}, ${w.cols}].`);
  if (w.format === 'f32') {
    const [sbk, sbn] = s.transposed ? [1, w.cols] : [w.cols, 1];
    g.matmul(a, w.data, c, { M: s.M, N: s.N, K: s.K, sam: s.sam, sak: s.sak, sbk, sbn, alpha: s.alpha, accumulate: s.accumulate });
    return;
  }
  const base = [s.M, s.N, s.K, s.sam, s.sak, s.transposed ? 1 : 0, w.cols, s.accumulate ? 1 : 0];
  const f32s = [s.alpha ?? 1];
  if (w.format === 'q4') {
    const zeros = w.zeros ?? g.tensor(1);
    g.tiled(MATMUL_KERNEL.q4, [...base, w.blockSize, w.blocks, w.zeros ? 1 : 0], f32s, [a, c, w.packed, w.scales, zeros], s.M, s.N);
  } else {
    g.tiled(MATMUL_KERNEL[w.format], base, f32s, [a, c, w.data], s.M, s.N);
  }
}

/** dst[k] = row index[k] of W (the embedding lookup), widened to float32. */
export function frozenGather(g: GpuRecorder, w: FrozenMatrix, index: Tensor, dst: Tensor, count: number): void {
  const width = w.cols;
  if (w.format === 'q4') throw new InvalidInputError('embedding', 'cannot be 4-bit.');
  const name = ({ f32: 'gather', f16: 'gatherF16', bf16: 'gatherBf16' } as const)[w.format];
  g.run(name, count * width, [count, width], [], [w.data, index, dst]);
}
