/**
 * The pieces of an ONNX graph every graph this project writes is made of (the training graphs
 * here, the model builder's exports): typed value infos and node attributes.
 */
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

/** A fixed size or a named dynamic one. */
export type Dim = number | string;
/** Integers are INT attributes; floats must be wrapped as `{ float }` so the type is never guessed. */
export type Attribute = number | number[] | string | { float: number } | { tensor: onnxProto.onnx.ITensorProto } | { graph: onnxProto.onnx.IGraphProto };

export function valueInfo(name: string, elemType: number, shape?: Dim[]): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: { tensorType: { elemType, ...(shape ? { shape: { dim: shape.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) } } : {}) } },
  };
}

export function attribute(name: string, value: Attribute): onnxProto.onnx.IAttributeProto {
  const { AttributeType } = onnx.AttributeProto;
  if (typeof value === 'string') return { name, type: AttributeType.STRING, s: new TextEncoder().encode(value) };
  if (Array.isArray(value)) return { name, type: AttributeType.INTS, ints: value };
  if (typeof value === 'number') return { name, type: AttributeType.INT, i: value };
  if ('float' in value) return { name, type: AttributeType.FLOAT, f: value.float };
  if ('graph' in value) return { name, type: AttributeType.GRAPH, g: value.graph };
  return { name, type: AttributeType.TENSOR, t: value.tensor };
}
