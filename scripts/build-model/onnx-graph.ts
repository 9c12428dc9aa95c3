/**
 * A tiny ONNX graph builder over `onnx-proto`: named inputs and outputs, initializers from typed
 * arrays, and nodes whose outputs get deterministic names, so the same calls always encode to the
 * same bytes.
 */
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;
type Dim = number | string;
/** Integers are INT attributes; floats must be wrapped as `{ float }` so the type is never guessed. */
type AttributeValue = number | number[] | string | { float: number } | { tensor: onnxProto.onnx.ITensorProto };

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
  nodeN(opType: string, inputs: string[], outputCount: number, attributes: Record<string, AttributeValue> = {}, outputs?: string[], domain = ''): string[] {
    const id = this.counter++;
    const names = outputs ?? Array.from({ length: outputCount }, (_, i) => `${opType.toLowerCase()}_${id}${outputCount > 1 ? `_${i}` : ''}`);
    if (domain) this.domains.add(domain);
    this.nodes.push({
      name: `${opType}_${id}`,
      ...(domain ? { domain } : {}),
      opType,
      input: inputs,
      output: names,
      attribute: Object.entries(attributes).map(([key, value]) => attribute(key, value)),
    });
    return names;
  }

  node(opType: string, inputs: string[], attributes: Record<string, AttributeValue> = {}, output?: string): string {
    return this.nodeN(opType, inputs, 1, attributes, output ? [output] : undefined)[0];
  }

  /** A node of a contrib domain (com.microsoft), imported at version 1. */
  contrib(opType: string, inputs: string[], attributes: Record<string, AttributeValue> = {}, output?: string): string {
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

function valueInfo(name: string, elemType: number, shape: Dim[]): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: shape.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, value: AttributeValue): onnxProto.onnx.IAttributeProto {
  const { AttributeType } = onnx.AttributeProto;
  if (typeof value === 'string') return { name, type: AttributeType.STRING, s: new TextEncoder().encode(value) };
  if (Array.isArray(value)) return { name, type: AttributeType.INTS, ints: value };
  if (typeof value === 'number') return { name, type: AttributeType.INT, i: value };
  if ('float' in value) return { name, type: AttributeType.FLOAT, f: value.float };
  return { name, type: AttributeType.TENSOR, t: value.tensor };
}

function littleEndianBytes(data: Float32Array): Uint8Array {
  const bytes = new Uint8Array(data.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < data.length; i++) view.setFloat32(i * 4, data[i], true);
  return bytes;
}
