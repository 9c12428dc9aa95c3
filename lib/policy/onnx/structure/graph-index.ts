/**
 * An ONNX graph indexed for walking by structure: who produces and who consumes each tensor, which
 * tensors are constants (initializers, Constant nodes, and constants seen through Cast, Transpose
 * or DequantizeLinear), and their values as float32 whatever the stored type (fp32, fp16, bf16,
 * inline or in external data files), or an fp16 matrix as its 16-bit values.
 */
import onnxProto from 'onnx-proto';
import { ModelLoadError } from '../../../errors.js';
import { bfloat16ToFloat, halfToFloat } from '../half.js';
import { ownAlignedPiece } from '../protobuf.js';

export type TensorProto = onnxProto.onnx.TensorProto;
export type NodeProto = onnxProto.onnx.NodeProto;

const FLOAT = 1;
export const UINT8 = 2;
const FLOAT16 = 10;
const DOUBLE = 11;
const BFLOAT16 = 16;

/** The 16-bit float type a constant was stored in. */
export type StoredHalf = 'float16' | 'bfloat16';

export class GraphIndex {
  readonly nodes: NodeProto[];
  readonly initializers = new Map<string, TensorProto>();
  readonly producers = new Map<string, NodeProto>();
  readonly consumers = new Map<string, NodeProto[]>();
  readonly outputs: string[];
  readonly inputs: string[];

  constructor(
    model: Uint8Array,
    private readonly external: Record<string, Uint8Array> = {},
    /** Whether projections stored in fp16 are read as their 16-bit values (halfMatrix) rather than widened. */
    readonly keepHalf = false,
  ) {
    let graph: onnxProto.onnx.GraphProto | null;
    try {
      graph = onnxProto.onnx.ModelProto.decode(model).graph as onnxProto.onnx.GraphProto | null;
    } catch (cause) {
      throw new ModelLoadError(`The ONNX file could not be decoded: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
    if (!graph) throw new ModelLoadError('The ONNX file has no graph.');
    this.nodes = graph.node as NodeProto[];
    for (const t of graph.initializer as TensorProto[]) this.initializers.set(t.name, t);
    for (const node of this.nodes) {
      if (node.opType === 'Constant') {
        const value = node.attribute.find((a) => a.name === 'value')?.t;
        if (value) this.initializers.set(node.output[0], value as TensorProto);
        continue;
      }
      for (const out of node.output) this.producers.set(out, node);
      for (const input of node.input) if (input) this.consumers.set(input, [...(this.consumers.get(input) ?? []), node]);
    }
    this.outputs = graph.output.map((o) => String(o.name));
    const constants = new Set(this.initializers.keys());
    this.inputs = graph.input.map((i) => String(i.name)).filter((n) => !constants.has(n));
  }

  consumersOf(tensor: string): NodeProto[] {
    return this.consumers.get(tensor) ?? [];
  }

  isInitializer(tensor: string): boolean {
    return this.initializers.has(tensor);
  }

  /** Whether `tensor` is a constant, directly or through Cast / Identity / Transpose / DequantizeLinear of constants. */
  isConstant(tensor: string): boolean {
    return this.constantSource(tensor) !== undefined;
  }

  /**
   * The initializer a constant tensor comes from and how it gets there: `transposed` when a 2-D
   * Transpose (perm [1, 0]) lies on the way, `dequantize` when a DequantizeLinear does.
   */
  constantSource(tensor: string): { name: string; transposed: boolean; dequantize?: NodeProto } | undefined {
    let transposed = false;
    let dequantize: NodeProto | undefined;
    for (let depth = 0; depth < 6; depth++) {
      if (this.initializers.has(tensor)) return { name: tensor, transposed, ...(dequantize ? { dequantize } : {}) };
      const node = this.producers.get(tensor);
      if (!node) return undefined;
      if (node.opType === 'Cast' || node.opType === 'Identity') tensor = node.input[0];
      else if (node.opType === 'Transpose' && permOf(node).join() === '1,0') {
        transposed = !transposed;
        tensor = node.input[0];
      } else if (node.opType === 'DequantizeLinear' && node.input.slice(1).every((i) => !i || this.initializers.has(i))) {
        dequantize = node;
        tensor = node.input[0];
      } else return undefined;
    }
    return undefined;
  }

  dims(name: string): number[] {
    return this.initializers.get(name)!.dims.map(Number);
  }

  size(name: string): number {
    return this.dims(name).reduce((a, b) => a * b, 1);
  }

  half(name: string): StoredHalf | undefined {
    const type = this.initializers.get(name)!.dataType;
    return type === FLOAT16 ? 'float16' : type === BFLOAT16 ? 'bfloat16' : undefined;
  }

  /** An initializer's raw bytes, inline or from its external data file. */
  bytes(name: string): Uint8Array {
    const t = this.initializers.get(name)!;
    // DataLocation.EXTERNAL
    if (t.dataLocation !== 1) return t.rawData;
    const entry = Object.fromEntries(t.externalData.map((e) => [e.key, e.value]));
    const file = this.external[entry.location ?? ''];
    if (!file) throw new ModelLoadError(`Initializer ${t.name} is in external file "${entry.location}", which was not given.`);
    const offset = Number(entry.offset ?? 0);
    return file.subarray(offset, offset + Number(entry.length ?? file.length - offset));
  }

  /** A float initializer as float32 (fp16 and bf16 widened exactly). */
  floats(name: string): Float32Array {
    const t = this.initializers.get(name);
    if (!t) throw new ModelLoadError(`The ONNX graph has no initializer ${name}.`);
    const count = this.size(name);
    if (t.dataType === FLOAT && t.floatData.length === count) return Float32Array.from(t.floatData);
    if (t.dataType === DOUBLE && t.doubleData.length === count) return Float32Array.from(t.doubleData);
    if (t.dataType === FLOAT16 && t.int32Data.length === count) return Float32Array.from(t.int32Data, halfToFloat);
    const raw = this.bytes(name);
    // An fp32 tensor read into an array of its own (external data, read piece by piece) is used
    // as it is: a copy would be a second copy of the weight. A view into a larger buffer (the
    // whole file's) is copied, so the weights do not keep that buffer alive.
    if (t.dataType === FLOAT && raw.length === count * 4 && ownAlignedPiece(raw)) return new Float32Array(raw.buffer, 0, count);
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    const out = new Float32Array(count);
    if (t.dataType === FLOAT && raw.length === count * 4) for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
    else if (t.dataType === FLOAT16 && raw.length === count * 2) for (let i = 0; i < count; i++) out[i] = halfToFloat(view.getUint16(i * 2, true));
    else if (t.dataType === BFLOAT16 && raw.length === count * 2) for (let i = 0; i < count; i++) out[i] = bfloat16ToFloat(view.getUint16(i * 2, true));
    else throw new ModelLoadError(`Initializer ${name} has data type ${t.dataType} or a size that does not match its shape; fp32, fp16 and bf16 are read.`);
    return out;
  }

  /**
   * An fp16 constant's 16-bit values as a [rows, cols] matrix in MatMul layout (undefined for any
   * other type): what an engine that widens in its graphs keeps, at half the bytes of float32.
   */
  halfMatrix(tensor: string): { bits: Uint16Array; rows: number; cols: number; initializer: string } | undefined {
    const source = this.constantSource(tensor);
    if (!source || source.dequantize || this.initializers.get(source.name)!.dataType !== FLOAT16) return undefined;
    const dims = this.dims(source.name);
    if (dims.length !== 2) return undefined;
    const bits = this.halfBits(source.name);
    if (!source.transposed) return { bits, rows: dims[0], cols: dims[1], initializer: source.name };
    return { bits: transpose(bits, dims[0], dims[1]), rows: dims[1], cols: dims[0], initializer: source.name };
  }

  private halfBits(name: string): Uint16Array {
    const t = this.initializers.get(name)!;
    const count = this.size(name);
    if (t.int32Data.length === count) return Uint16Array.from(t.int32Data);
    const raw = this.bytes(name);
    if (raw.length !== count * 2) throw new ModelLoadError(`Initializer ${name} has ${raw.length} bytes; its shape needs ${count * 2} as fp16.`);
    // As floats() does: a piece of its own is used as it is, a view into the whole file is copied.
    if (ownAlignedPiece(raw)) return new Uint16Array(raw.buffer, 0, count);
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    const out = new Uint16Array(count);
    for (let i = 0; i < count; i++) out[i] = view.getUint16(i * 2, true);
    return out;
  }

  /** A float constant's value as a [rows, cols] matrix in MatMul layout, whatever lies between it and its user. */
  matrix(tensor: string): { data: Float32Array; rows: number; cols: number; initializer: string; half?: StoredHalf } | undefined {
    const source = this.constantSource(tensor);
    if (!source || source.dequantize) return undefined;
    const dims = this.dims(source.name);
    if (dims.length !== 2) return undefined;
    const data = this.floats(source.name);
    const half = this.half(source.name);
    const base = { initializer: source.name, ...(half ? { half } : {}) };
    if (!source.transposed) return { data, rows: dims[0], cols: dims[1], ...base };
    return { data: transpose(data, dims[0], dims[1]), rows: dims[1], cols: dims[0], ...base };
  }
}

export function attributeInt(node: NodeProto, name: string): number | undefined {
  const a = node.attribute.find((x) => x.name === name);
  return a ? Number(a.i) : undefined;
}

function permOf(node: NodeProto): number[] {
  return (node.attribute.find((a) => a.name === 'perm')?.ints ?? []).map(Number);
}

export function transpose<T extends Float32Array | Uint16Array>(data: T, rows: number, cols: number): T {
  const out = new (data.constructor as new (length: number) => T)(data.length);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j * rows + i] = data[i * cols + j];
  return out;
}

