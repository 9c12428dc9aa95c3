/**
 * An export rewritten to take a LoRA adapter's A and B as graph inputs: after each adapted
 * projection (found by structure, find-decoder.ts), y = x W (+ b) becomes
 *
 *   y = x W (+ b) + s (x A^T) B^T,   A [r, in] = `lora.{layer}.{module}.A`, B [out, r] = `....B`
 *
 * the names and layouts the training graphs take (PEFT's). So a policy samples under the adapter
 * being trained by feeding the same arrays, with no merge and no new session per update.
 */
import onnxProto from 'onnx-proto';
import { ModelLoadError } from '../../../errors.js';
import type { FoundDecoder, ProjectionName } from './decoder.js';

const { onnx } = onnxProto;

export const loraInputName = (layer: number, module: ProjectionName, which: 'A' | 'B') => `lora.${layer}.${module}.${which}`;

export interface LoraInputsConfig {
  r: number;
  scale: number;
  targetModules: readonly ProjectionName[];
}

export function addLoraInputs(model: Uint8Array, decoder: FoundDecoder, lora: LoraInputsConfig): Uint8Array {
  const proto = onnx.ModelProto.decode(model);
  const graph = proto.graph as onnxProto.onnx.GraphProto;
  const nodes = graph.node as onnxProto.onnx.NodeProto[];
  const producer = new Map<string, onnxProto.onnx.NodeProto>();
  for (const node of nodes) for (const out of node.output) producer.set(out, node);
  const inserted = new Map<onnxProto.onnx.NodeProto, onnxProto.onnx.INodeProto[]>();
  const scale = `lora.scale`;
  graph.initializer.push(onnx.TensorProto.create({ name: scale, dims: [], dataType: onnx.TensorProto.DataType.FLOAT, floatData: [lora.scale] }));
  decoder.layers.forEach((layer, l) => {
    for (const m of lora.targetModules) {
      const p = layer[m];
      if (!p.site) throw new ModelLoadError(`Layer ${l} ${m}: its place in the graph is unknown.`);
      const { input, output } = p.site;
      const node = producer.get(output);
      if (!node) throw new ModelLoadError(`Layer ${l} ${m}: nothing produces ${output}.`);
      const base = `${output}/without_lora`;
      node.output = node.output.map((o) => (o === output ? base : o));
      const [a, b] = [loraInputName(l, m, 'A'), loraInputName(l, m, 'B')];
      graph.input.push(valueInfo(a, [lora.r, p.inDim]), valueInfo(b, [p.outDim, lora.r]));
      const t = (name: string) => `${output}/lora/${name}`;
      inserted.set(node, [
        { opType: 'Transpose', input: [a], output: [t('At')], attribute: [{ name: 'perm', type: onnx.AttributeProto.AttributeType.INTS, ints: [1, 0] }] },
        { opType: 'MatMul', input: [input, t('At')], output: [t('u')] },
        { opType: 'Transpose', input: [b], output: [t('Bt')], attribute: [{ name: 'perm', type: onnx.AttributeProto.AttributeType.INTS, ints: [1, 0] }] },
        { opType: 'MatMul', input: [t('u'), t('Bt')], output: [t('delta')] },
        { opType: 'Mul', input: [t('delta'), scale], output: [t('scaled')] },
        { opType: 'Add', input: [base, t('scaled')], output: [output] },
      ]);
    }
  });
  // Each projection's LoRA nodes right after the node that produced its output: the order stays topological.
  graph.node = nodes.flatMap((node) => [node, ...(inserted.get(node) ?? []).map((n) => onnx.NodeProto.create(n))]);
  return onnx.ModelProto.encode(proto).finish();
}

function valueInfo(name: string, dims: number[]): onnxProto.onnx.ValueInfoProto {
  return onnx.ValueInfoProto.create({ name, type: { tensorType: { elemType: onnx.TensorProto.DataType.FLOAT, shape: { dim: dims.map((d) => ({ dimValue: d })) } } } });
}
