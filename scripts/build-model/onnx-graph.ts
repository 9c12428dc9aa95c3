/**
 * A tiny ONNX graph builder over `onnx-proto`: named inputs and outputs, initializers from typed
 * arrays, and nodes whose outputs get deterministic names, so the same calls always encode to the
 * same bytes.
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

  /**
   * @param halfParams store `param` tensors as float16, each read through a Cast to float32 (the
   *   weights of an fp16 export at half the bytes; the arithmetic stays float32).
   */
  constructor(private readonly halfParams = false) {}

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

  /** A model parameter: float32, or float16 behind a Cast when the builder keeps parameters at half precision. */
  param(name: string, data: Float32Array, dims: number[]): string {
    if (!this.halfParams) return this.weight(name, data, dims);
    this.initializers.push({ name, dims, dataType: DataType.FLOAT16, rawData: halfBytes(data) });
    return this.node('Cast', [name], { to: DataType.FLOAT });
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

  encode(graphName: string, docString: string): Uint8Array {
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

function littleEndianBytes(data: Float32Array): Uint8Array {
  const bytes = new Uint8Array(data.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < data.length; i++) view.setFloat32(i * 4, data[i], true);
  return bytes;
}
