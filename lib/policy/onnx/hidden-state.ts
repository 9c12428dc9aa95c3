/**
 * Exposes a decoder's final hidden state: the input of the projection that produces `logits` (the
 * LM head) becomes one more graph output, so a forward pass returns h next to z = head(h) and an
 * adapter on the head can be trained from it (lib/grad).
 *
 * The head is found by walking back from `logits` through the ops exports put after it (Cast,
 * Identity, Reshape, scaling by a constant, soft-capping) to the first projection: MatMul, Gemm,
 * FusedMatMul, MatMulNBits (4-bit heads), or MatMulInteger fed by DynamicQuantizeLinear (8-bit
 * heads). Its activation input is h.
 *
 * The model is not decoded and re-encoded: only the graph's nodes and value infos are parsed, and
 * the new bytes are the old ones with one `output` appended to the graph message (protobuf fields
 * may come in any order). Initializers, inline or in `.onnx_data` files, are copied untouched, so
 * a large model costs one copy of its bytes and no parsing of its weights.
 */
import { ModelLoadError } from '../../errors.js';
import { concat, fieldHeader, fields, findField, LENGTH_DELIMITED, type Field } from './protobuf.js';

export interface HiddenStateGraph {
  /** The model with the extra output. */
  bytes: Uint8Array;
  /** Name of the hidden-state output (the head's input tensor, unchanged). */
  name: string;
  /** Op type of the projection found (for messages and tests). */
  head: string;
}

type NodeProto = import('onnx-proto').onnx.NodeProto;

// Field numbers of onnx.proto.
const MODEL_GRAPH = 7;
const GRAPH_NODE = 1;
const GRAPH_INITIALIZER = 5;
const GRAPH_INPUT = 11;
const GRAPH_OUTPUT = 12;
const GRAPH_VALUE_INFO = 13;

/** Ops exports put between the head and `logits`: casts, reshapes, scaling, bias, soft-capping. */
const PASS_THROUGH = new Set(['Cast', 'Identity', 'Reshape', 'Squeeze', 'Unsqueeze', 'Flatten', 'Mul', 'Div', 'Add', 'Sub', 'Tanh']);
const PROJECTIONS = new Set(['MatMul', 'Gemm', 'FusedMatMul', 'MatMulNBits']);

export async function exposeHiddenState(model: Uint8Array, logitsName = 'logits'): Promise<HiddenStateGraph> {
  const { onnx } = (await import('onnx-proto')).default;
  const graph = findField(model, 0, model.length, MODEL_GRAPH);
  if (!graph) throw new ModelLoadError('The ONNX file has no graph.');

  const producers = new Map<string, NodeProto>();
  const typed = new Map<string, number>();
  const constants = new Set<string>();
  const outputs: string[] = [];
  for (const field of fields(model, graph.start, graph.end)) {
    if (field.wireType !== LENGTH_DELIMITED) continue;
    const body = model.subarray(field.start, field.end);
    if (field.number === GRAPH_NODE) {
      const node = onnx.NodeProto.decode(body);
      for (const output of node.output) producers.set(output, node);
      if (node.opType === 'Constant') for (const output of node.output) constants.add(output);
    } else if (field.number === GRAPH_INITIALIZER) {
      // Only the name and type: the tensor's data is never touched.
      const { name, dataType } = tensorHeader(body);
      constants.add(name);
      typed.set(name, dataType);
    } else if (field.number === GRAPH_INPUT || field.number === GRAPH_OUTPUT || field.number === GRAPH_VALUE_INFO) {
      const info = onnx.ValueInfoProto.decode(body);
      const elemType = info.type?.tensorType?.elemType;
      if (elemType) typed.set(info.name, elemType);
      if (field.number === GRAPH_OUTPUT) outputs.push(info.name);
    }
  }
  if (!outputs.includes(logitsName)) throw new ModelLoadError(`The ONNX graph has no "${logitsName}" output.`);

  const found = findHead(logitsName, producers, constants);
  if (!found) {
    throw new ModelLoadError(
      `Could not find the projection that produces "${logitsName}" (MatMul, Gemm or MatMulNBits within a few Cast/Reshape/scale ops); ` +
        'the hidden state of this export cannot be exposed, so no adapter can be trained on it.',
    );
  }
  const { name, head } = found;
  if (!outputs.includes(name)) {
    const elemType = typed.get(name) ?? typeOfHead(head, typed, producers) ?? typed.get(logitsName);
    const info = onnx.ValueInfoProto.encode({ name, type: { tensorType: { elemType } } }).finish();
    const extra = concat([fieldHeader(GRAPH_OUTPUT, info.length), info]);
    model = splice(model, graph, extra);
  }
  return { bytes: model, name, head: head.opType };
}

/** Depth-first from `logits` through pass-through ops to the first projection; h is its input 0. */
function findHead(logits: string, producers: Map<string, NodeProto>, constants: Set<string>): { name: string; head: NodeProto } | undefined {
  const seen = new Set<string>();
  const visit = (tensor: string, depth: number): { name: string; head: NodeProto } | undefined => {
    const node = producers.get(tensor);
    if (!node || depth > 12 || seen.has(tensor) || constants.has(tensor)) return undefined;
    seen.add(tensor);
    if (PROJECTIONS.has(node.opType)) return { name: node.input[0], head: node };
    if (node.opType === 'MatMulInteger') {
      const quantize = producers.get(node.input[0]);
      return quantize?.opType === 'DynamicQuantizeLinear' ? { name: quantize.input[0], head: node } : undefined;
    }
    if (!PASS_THROUGH.has(node.opType)) return undefined;
    for (const input of node.input) {
      if (!input || constants.has(input)) continue;
      const found = visit(input, depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  return visit(logits, 0);
}

/** h's element type when no value info states it: that of the head's weight or scales. */
function typeOfHead(head: NodeProto, typed: Map<string, number>, producers: Map<string, NodeProto>): number | undefined {
  if (head.opType === 'MatMulNBits') return typed.get(head.input[2]); // scales have h's type
  if (head.opType === 'MatMulInteger') return 1; // DynamicQuantizeLinear takes float32
  return typeOf(head.input[1], typed, producers, 0);
}

/** A tensor's type, followed back through the ops that keep it (a tied head reads Transpose(embedding)) or set it (Cast). */
function typeOf(tensor: string, typed: Map<string, number>, producers: Map<string, NodeProto>, depth: number): number | undefined {
  const known = typed.get(tensor);
  if (known !== undefined || depth > 8) return known;
  const node = producers.get(tensor);
  if (!node) return undefined;
  if (node.opType === 'Cast') {
    const to = node.attribute.find((a) => a.name === 'to')?.i;
    return to === undefined || to === null ? undefined : Number(to);
  }
  return KEEPS_TYPE.has(node.opType) ? typeOf(node.input[0], typed, producers, depth + 1) : undefined;
}

const KEEPS_TYPE = new Set(['Transpose', 'Reshape', 'Identity', 'Squeeze', 'Unsqueeze', 'Flatten']);

/** A TensorProto's name and data type, read without decoding its data. */
function tensorHeader(body: Uint8Array): { name: string; dataType: number } {
  let name = '';
  let dataType = 0;
  for (const field of fields(body, 0, body.length)) {
    if (field.number === 8 && field.wireType === LENGTH_DELIMITED) name = new TextDecoder().decode(body.subarray(field.start, field.end));
    else if (field.number === 2 && field.wireType === 0) dataType = field.value;
  }
  return { name, dataType };
}

/** The model with `extra` appended to the payload of the graph field (whose length grows). */
function splice(model: Uint8Array, graph: Field, extra: Uint8Array): Uint8Array {
  const header = fieldHeader(MODEL_GRAPH, graph.end - graph.start + extra.length);
  return concat([model.subarray(0, graph.tagStart), header, model.subarray(graph.start, graph.end), extra, model.subarray(graph.end)]);
}
