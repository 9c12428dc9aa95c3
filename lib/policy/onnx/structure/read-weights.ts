/**
 * The weights of the decoder's parts once the structure is found (find-decoder.ts): a projection's
 * matrix and bias as stored (fp32, fp16 / bf16 widened exactly, or fp16 MatMul weights kept at 16 bits when the index keeps halves, Gemm's transposed [out, in]
 * turned to [in, out], 4-bit MatMulNBits blocks kept packed), and the head's matrix, or nothing
 * when it is the embedding table transposed (tied).
 */
import { ModelLoadError, UnsupportedError } from '../../../errors.js';
import type { FoundHalf, FoundProjection, FoundQ4 } from './decoder.js';
import { attributeInt, GraphIndex, transpose, UINT8, type NodeProto } from './graph-index.js';
import { ownBytes } from '../protobuf.js';

/** A MatMul, Gemm or MatMulNBits with a constant weight, where it sits in the graph. */
export interface Weighted {
  node: NodeProto;
  /** The activation it reads. */
  input: string;
  /** Its output after the bias Add, when there is one. */
  output: string;
  bias?: string;
}

export function readProjection(g: GraphIndex, w: Weighted): FoundProjection {
  return { ...readWeight(g, w), site: { input: w.input, output: w.output } };
}

function readWeight(g: GraphIndex, w: Weighted): FoundProjection {
  const { node } = w;
  const bias = w.bias ? g.floats(g.constantSource(w.bias)!.name) : undefined;
  if (node.opType === 'MatMulNBits') {
    const q4 = readQ4(g, node);
    return { inDim: q4.K, outDim: q4.N, weight: q4, initializer: node.input[1], ...(bias ? { bias } : {}) };
  }
  const source = g.constantSource(node.input[1])!;
  if (source.dequantize) throw new UnsupportedError(`${node.name || source.name}: weights behind DequantizeLinear (QDQ) are not supported; fp32, fp16, bf16 and MatMulNBits are.`);
  const half = g.keepHalf && node.opType === 'MatMul' ? g.halfMatrix(node.input[1]) : undefined;
  if (half) {
    const weight: FoundHalf = { kind: 'float16', K: half.rows, N: half.cols, bits: half.bits };
    return { inDim: half.rows, outDim: half.cols, weight, initializer: half.initializer, half: 'float16', ...(bias ? { bias } : {}) };
  }
  let matrix = g.matrix(node.input[1]);
  if (!matrix) throw new ModelLoadError(`${node.name || source.name}: the weight is not a 2-D float constant.`);
  let gemmBias: Float32Array | undefined;
  if (node.opType === 'Gemm') {
    if (attributeInt(node, 'transA') === 1) throw new UnsupportedError(`${node.name}: Gemm with transA is not a projection.`);
    // Gemm(x, W^T) with transB: the weight is stored as PyTorch keeps it, [out, in].
    if (attributeInt(node, 'transB') === 1) matrix = { ...matrix, data: transpose(matrix.data, matrix.rows, matrix.cols), rows: matrix.cols, cols: matrix.rows };
    if (node.input[2] && g.isConstant(node.input[2])) gemmBias = g.floats(g.constantSource(node.input[2])!.name);
  }
  const b = gemmBias ?? bias;
  return { inDim: matrix.rows, outDim: matrix.cols, weight: matrix.data, initializer: matrix.initializer, ...(b ? { bias: b } : {}), ...(matrix.half ? { half: matrix.half } : {}) };
}

export function readHead(g: GraphIndex, node: NodeProto, embedding: string, hidden: number, vocab: number): { data: Float32Array; half?: 'float16' | 'bfloat16' } | undefined {
  if (node.opType === 'MatMulNBits') {
    const q4 = readQ4(g, node);
    if (q4.K !== hidden || q4.N !== vocab) throw new ModelLoadError(`The head is [${q4.K}, ${q4.N}]; expected [${hidden}, ${vocab}].`);
    return { data: dequantize(q4) };
  }
  const source = g.constantSource(node.input[1]);
  if (!source) throw new ModelLoadError('Part not found: the head weight (neither a constant matrix nor the transposed embedding).');
  const transB = node.opType === 'Gemm' && attributeInt(node, 'transB') === 1;
  // The head reads the embedding table itself, transposed: tied.
  if (source.name === embedding && source.transposed !== transB) return undefined;
  let matrix = g.matrix(node.input[1]);
  if (!matrix) throw new ModelLoadError('The head weight is not a 2-D float constant.');
  if (transB) matrix = { ...matrix, data: transpose(matrix.data, matrix.rows, matrix.cols), rows: matrix.cols, cols: matrix.rows };
  if (matrix.rows !== hidden || matrix.cols !== vocab) throw new ModelLoadError(`The head is [${matrix.rows}, ${matrix.cols}]; expected [${hidden}, ${vocab}].`);
  return { data: matrix.data, ...(matrix.half ? { half: matrix.half } : {}) };
}

function readQ4(g: GraphIndex, node: NodeProto): FoundQ4 {
  const what = node.name || node.input[1];
  const K = attributeInt(node, 'K') ?? NaN;
  const N = attributeInt(node, 'N') ?? NaN;
  const bits = attributeInt(node, 'bits');
  const blockSize = attributeInt(node, 'block_size') ?? NaN;
  if (bits !== 4) throw new UnsupportedError(`${what}: MatMulNBits with ${bits} bits; 4-bit weights are supported.`);
  if (!(K > 0 && N > 0 && blockSize >= 16 && (blockSize & (blockSize - 1)) === 0)) throw new ModelLoadError(`${what}: MatMulNBits needs K, N and a power-of-two block_size.`);
  if (node.input[4] || node.input[5]) throw new UnsupportedError(`${what}: MatMulNBits with g_idx or a fused bias is not supported.`);
  const blocks = Math.ceil(K / blockSize);
  // Never a view into a larger buffer (a Node Buffer's slice is one): it would keep the whole model file alive beside the weights read out of it.
  const packed = ownBytes(g.bytes(node.input[1]));
  if (packed.length !== N * blocks * (blockSize / 2)) throw new ModelLoadError(`${what}: ${packed.length} packed bytes for N ${N}, K ${K}, block ${blockSize}.`);
  const scales = g.floats(node.input[2]);
  if (scales.length !== N * blocks) throw new ModelLoadError(`${what}: ${scales.length} scales for ${N * blocks} blocks.`);
  const zp = node.input[3];
  if (!zp) return { kind: 'q4', K, N, blockSize, packed, scales };
  if (!g.isInitializer(zp) || g.initializers.get(zp)!.dataType !== UINT8) throw new UnsupportedError(`${zp}: MatMulNBits zero points must be packed uint8 initializers.`);
  const zeroPoints = ownBytes(g.bytes(zp));
  if (zeroPoints.length !== N * Math.ceil(blocks / 2)) throw new ModelLoadError(`${zp}: ${zeroPoints.length} zero-point bytes for N ${N} and ${blocks} blocks.`);
  return { kind: 'q4', K, N, blockSize, packed, scales, zeroPoints };
}

/** The whole [K, N] float matrix of 4-bit blocks: W[k, n] = (q - zero) * scale. */
export function dequantize(q: FoundQ4): Float32Array {
  const out = new Float32Array(q.K * q.N);
  const blocks = Math.ceil(q.K / q.blockSize);
  const blob = q.blockSize / 2;
  const zpStride = Math.ceil(blocks / 2);
  for (let n = 0; n < q.N; n++) {
    for (let b = 0; b < blocks; b++) {
      const scale = q.scales[n * blocks + b];
      const zp = q.zeroPoints ? (q.zeroPoints[n * zpStride + (b >> 1)] >> ((b & 1) * 4)) & 0xf : 8;
      const base = (n * blocks + b) * blob;
      const end = Math.min(q.blockSize, q.K - b * q.blockSize);
      for (let i = 0; i < end; i++) {
        const byte = q.packed[base + (i >> 1)];
        out[(b * q.blockSize + i) * q.N + n] = ((i & 1 ? byte >> 4 : byte & 0xf) - zp) * scale;
      }
    }
  }
  return out;
}
