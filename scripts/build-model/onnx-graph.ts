/**
 * A tiny ONNX graph builder over `onnx-proto`: named inputs and outputs, initializers from typed
 * arrays, and nodes whose outputs get deterministic names, so the same calls always encode to the
 * same bytes. `encode` writes the initializers inline, or (`externalData`) their bytes to a
 * separate data file as large exports must: a protobuf cannot exceed 2 GB.
 */
import onnxProto from 'onnx-proto';
import { floatToHalf } from '../../lib/policy/onnx/half.js';
import { attribute, valueInfo, type Attribute, type Dim } from '../../lib/train/graph/proto.js';

const { onnx } = onnxProto;

export const DataType = onnx.TensorProto.DataType;

/** The opset the decoder is written against: every op used exists unchanged from opset 14 on. */
export const OPSET = 14;

export class GraphBuilder {
  private readonly nodes: onnxProto.onnx.INodeProto[] = [];
  private readonly inputs: onnxProto.onnx.IValueInfoProto[] = [];
  private readonly outputs: onnxProto.onnx.IValueInfoProto[] = [];
  private readonly initializers: onnxProto.onnx.ITensorProto[] = [];
  private counter = 0;
  private readonly domains = new Set<string>();
  private readonly scopeUses = new Map<string, number>();
  /** Node names are `${scope}/${opType}` (as torch.onnx and onnxruntime-genai name them) while set. */
  private scope: string | undefined;

  private readonly halfParams: boolean;
  /** Activations (and the graph's float I/O) are float16, as in the hub's fp16 and q4f16 exports. */
  readonly halfActivations: boolean;
  /** The element type of activations. */
  readonly act: number;

  /**
   * @param precision.params 'float16': `param` tensors are stored as float16; with float32
   *   activations each is read through a Cast to float32 (the weights at half the bytes, the
   *   arithmetic float32), with float16 activations it is used as it is.
   */
  constructor(precision: { params?: 'float32' | 'float16'; activations?: 'float32' | 'float16' } = {}) {
    this.halfActivations = precision.activations === 'float16';
    this.halfParams = precision.params === 'float16' || this.halfActivations;
    this.act = this.halfActivations ? DataType.FLOAT16 : DataType.FLOAT;
  }

  /** Runs `build` with its nodes named after the module `scope` (`/model/layers.0/self_attn/q_proj`). */
  inScope<T>(scope: string | undefined, build: () => T): T {
    const outer = this.scope;
    this.scope = scope;
    try {
      return build();
    } finally {
      this.scope = outer;
    }
  }

  input(name: string, dataType: number, shape: Dim[]): string {
    this.inputs.push(valueInfo(name, dataType, shape));
    return name;
  }

  output(name: string, dataType: number, shape: Dim[]): void {
    this.outputs.push(valueInfo(name, dataType, shape));
  }

  /** A float32 weight, stored little-endian in `rawData`. */
  weight(name: string, data: Float32Array, dims: number[]): string {
    this.initializers.push({ name, dims, dataType: DataType.FLOAT, rawData: littleEndianBytes(data) });
    return name;
  }

  /** A float16 weight. */
  half(name: string, data: Float32Array, dims: number[]): string {
    this.initializers.push({ name, dims, dataType: DataType.FLOAT16, rawData: halfBytes(data) });
    return name;
  }

  /** A model parameter in the activations' type: float32, float16, or float16 behind a Cast to float32. */
  param(name: string, data: Float32Array, dims: number[]): string {
    if (!this.halfParams) return this.weight(name, data, dims);
    this.half(name, data, dims);
    return this.halfActivations ? name : this.node('Cast', [name], { to: DataType.FLOAT });
  }

  /** A float32 tensor (computed in float32: positions, angles, masks) in the activations' type. */
  toAct(tensor: string): string {
    return this.halfActivations ? this.node('Cast', [tensor], { to: DataType.FLOAT16 }) : tensor;
  }

  /** A fresh name as torch.onnx gives the initializers it makes by constant folding (`onnx::MatMul_1234`). */
  anonymous(op: string): string {
    return `onnx::${op}_${this.counter++}`;
  }

  int64s(values: number[], dims: number[] = [values.length]): string {
    const name = `const_${this.counter++}`;
    this.initializers.push({ name, dims, dataType: DataType.INT64, int64Data: values });
    return name;
  }

  float(value: number): string {
    return this.weight(`const_${this.counter++}`, Float32Array.of(value), []);
  }

  /** A scalar in the activations' type. */
  scalar(value: number): string {
    const name = `const_${this.counter++}`;
    return this.halfActivations ? this.half(name, Float32Array.of(value), []) : this.weight(name, Float32Array.of(value), []);
  }

  /** A raw initializer (for example packed 4-bit weights as UINT8). */
  tensor(name: string, dataType: number, dims: number[], rawData: Uint8Array): string {
    this.initializers.push({ name, dims, dataType, rawData });
    return name;
  }

  /** Adds a node; returns its output names (fresh names unless `outputs` are given). */
  nodeN(opType: string, inputs: string[], outputCount: number, attributes: Record<string, Attribute> = {}, outputs?: string[], domain = ''): string[] {
    const id = this.counter++;
    const names = outputs ?? Array.from({ length: outputCount }, (_, i) => `${opType.toLowerCase()}_${id}${outputCount > 1 ? `_${i}` : ''}`);
    if (domain) this.domains.add(domain);
    this.nodes.push({
      name: this.scope === undefined ? `${opType}_${id}` : this.scopedName(opType),
      ...(domain ? { domain } : {}),
      opType,
      input: inputs,
      output: names,
      attribute: Object.entries(attributes).map(([key, value]) => attribute(key, value)),
    });
    return names;
  }

  private scopedName(opType: string): string {
    const base = `${this.scope}/${opType}`;
    const uses = this.scopeUses.get(base) ?? 0;
    this.scopeUses.set(base, uses + 1);
    return uses === 0 ? base : `${base}_${uses}`;
  }

  node(opType: string, inputs: string[], attributes: Record<string, Attribute> = {}, output?: string): string {
    return this.nodeN(opType, inputs, 1, attributes, output ? [output] : undefined)[0];
  }

  /** A node of a contrib domain (com.microsoft), imported at version 1. */
  contrib(opType: string, inputs: string[], attributes: Record<string, Attribute> = {}, output?: string): string {
    return this.nodeN(opType, inputs, 1, attributes, output ? [output] : undefined, 'com.microsoft')[0];
  }

  /**
   * The model's bytes. With `externalData` (the data file's name, `model.onnx_data`), every
   * initializer of at least 1 KiB is stored there instead, as onnx's `save_model` does
   * (size_threshold 1024), those of 1 MiB and more at offsets aligned to 64 KiB so they can be
   * memory-mapped; `data` lists the file's pieces in order.
   */
  encode(graphName: string, docString: string): Uint8Array;
  encode(graphName: string, docString: string, externalData: string): { model: Uint8Array; data: ExternalPiece[]; dataSize: number };
  encode(graphName: string, docString: string, externalData?: string): Uint8Array | { model: Uint8Array; data: ExternalPiece[]; dataSize: number } {
    const data: ExternalPiece[] = [];
    let size = 0;
    if (externalData) {
      for (const tensor of this.initializers) {
        const bytes = tensor.rawData;
        if (!bytes || bytes.length < 1024) continue;
        if (bytes.length >= 1 << 20) size = Math.ceil(size / (1 << 16)) * (1 << 16);
        data.push({ offset: size, bytes });
        tensor.externalData = [
          { key: 'location', value: externalData },
          { key: 'offset', value: String(size) },
          { key: 'length', value: String(bytes.length) },
        ];
        tensor.dataLocation = onnx.TensorProto.DataLocation.EXTERNAL;
        tensor.rawData = new Uint8Array(0);
        size += bytes.length;
      }
    }
    const model = this.encodeModel(graphName, docString);
    return externalData ? { model, data, dataSize: size } : model;
  }

  private encodeModel(graphName: string, docString: string): Uint8Array {
    const model = onnx.ModelProto.create({
      irVersion: 8,
      producerName: 'webgrpo build-model',
      docString,
      opsetImport: [{ domain: '', version: OPSET }, ...[...this.domains].map((domain) => ({ domain, version: 1 }))],
      graph: {
        name: graphName,
        node: this.nodes,
        input: this.inputs,
        output: this.outputs,
        initializer: this.initializers,
      },
    });
    return onnx.ModelProto.encode(model).finish();
  }
}

function halfBytes(data: Float32Array): Uint8Array {
  const bytes = new Uint8Array(data.length * 2);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < data.length; i++) view.setUint16(i * 2, floatToHalf(data[i]), true);
  return bytes;
}

/** One initializer's bytes in an external data file. */
export interface ExternalPiece {
  offset: number;
  bytes: Uint8Array;
}

const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

function littleEndianBytes(data: Float32Array): Uint8Array {
  // The array's own bytes where the host is little-endian: no copy of a large model's weights.
  if (LITTLE_ENDIAN) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const bytes = new Uint8Array(data.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < data.length; i++) view.setFloat32(i * 4, data[i], true);
  return bytes;
}
