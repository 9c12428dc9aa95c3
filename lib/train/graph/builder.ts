/**
 * Builds a forward graph and its backward graph together, then cuts them apart: every node is
 * written in one phase, and each tensor the backward reads from the forward (an activation, or a
 * forward input) becomes a forward output and a backward input. So the backward is written next
 * to the forward op it differentiates, and what it keeps is exactly what it reads.
 *
 * Float tensors are float32 or float64 (`precision`): float64 graphs run the same ops in double on
 * onnxruntime's CPU kernels, which is what the finite-difference checks need.
 */
import onnxProto from 'onnx-proto';
import { attribute, valueInfo, type Attribute, type Dim } from './proto.js';

const { onnx } = onnxProto;
const DataType = onnx.TensorProto.DataType;

export type Precision = 'float32' | 'float64';
export type Phase = 'forward' | 'backward';
type ElemType = 'float' | 'float16' | 'int64' | 'bool' | 'uint8';

/**
 * The opset the training graphs are written against: at least 18 for BitwiseAnd (the backward's
 * 4-bit blocks unpacked in the graph); the reductions take their axes as inputs.
 */
export const TRAINING_OPSET = 21;
export const UINT8 = DataType.UINT8;

interface Declared {
  name: string;
  type: ElemType;
  shape: Dim[];
  phase: Phase;
}

export interface TrainingModels {
  forward: Uint8Array;
  backward: Uint8Array;
  /** Forward outputs the backward reads, fed to it as they are (activations, and logps or entropies when read). */
  saved: string[];
  /** Forward inputs the backward reads too. */
  sharedInputs: string[];
  /** Every input of each model, by name (what a run feeds). */
  forwardInputs: string[];
  backwardInputs: string[];
}

export class TrainingGraphBuilder {
  phase: Phase = 'forward';
  private readonly nodes: Array<{ phase: Phase; proto: onnxProto.onnx.INodeProto }> = [];
  private readonly initializers = new Map<string, onnxProto.onnx.ITensorProto>();
  private readonly inputs: Declared[] = [];
  private readonly outputs: Declared[] = [];
  private readonly producedIn = new Map<string, Phase>();
  private counter = 0;
  private readonly domains = new Set<string>();

  /**
   * `prefix` starts every name the builder makes up, so a subgraph's names never meet its outer
   * graph's; `types` is shared with an outer graph, whose tensors a subgraph reads by name.
   */
  constructor(
    readonly precision: Precision,
    private readonly prefix = '',
    private readonly types = new Map<string, ElemType>(),
  ) {}

  private get floatType(): number {
    return this.precision === 'float64' ? DataType.DOUBLE : DataType.FLOAT;
  }

  input(name: string, type: ElemType, shape: Dim[]): string {
    this.inputs.push({ name, type, shape, phase: this.phase });
    this.types.set(name, type);
    this.producedIn.set(name, this.phase);
    return name;
  }

  output(name: string, shape: Dim[]): void {
    this.outputs.push({ name, type: this.types.get(name) ?? 'float', shape, phase: this.phase });
  }

  /** A name of this builder's own (its prefix, `label`, a count), for a node output that must be named. */
  fresh(label: string): string {
    return `${this.prefix}${label}${this.counter++}`;
  }

  /** A float constant in the graph's precision (weights included). */
  floats(name: string | undefined, values: ArrayLike<number>, dims: number[]): string {
    const id = name ?? `${this.prefix}c${this.counter++}`;
    const data = this.precision === 'float64' ? Float64Array.from(values as ArrayLike<number>) : Float32Array.from(values as ArrayLike<number>);
    this.initializers.set(id, { name: id, dims, dataType: this.floatType, rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) });
    this.types.set(id, 'float');
    return id;
  }

  /**
   * A float32 initializer whose bytes are not in the graph: the session is given them apart, as
   * external data at `location` (onnxruntime's `externalData` session option), so a large weight
   * is copied once, into the session, and never into the graph's own bytes.
   */
  externalFloats(name: string, dims: number[], location: string): string {
    const bytes = dims.reduce((a, b) => a * b, 1) * 4;
    const externalData = [{ key: 'location', value: location }, { key: 'offset', value: '0' }, { key: 'length', value: String(bytes) }];
    this.initializers.set(name, { name, dims, dataType: DataType.FLOAT, dataLocation: onnx.TensorProto.DataLocation.EXTERNAL, externalData });
    this.types.set(name, 'float');
    return name;
  }

  scalar(value: number): string {
    return this.floats(undefined, [value], []);
  }

  /** A uint8 initializer (packed 4-bit weights, nibble masks). */
  uint8s(values: ArrayLike<number>, dims: number[] = [values.length], name?: string): string {
    const id = name ?? `${this.prefix}u${this.counter++}`;
    this.initializers.set(id, { name: id, dims, dataType: DataType.UINT8, rawData: Uint8Array.from(values) });
    this.types.set(id, 'uint8');
    return id;
  }

  int64s(values: number[], dims: number[] = [values.length]): string {
    const id = `${this.prefix}i${this.counter++}`;
    this.initializers.set(id, { name: id, dims, dataType: DataType.INT64, int64Data: values });
    this.types.set(id, 'int64');
    return id;
  }

  /** Adds a node; its outputs get fresh names unless `names` gives them (graph outputs need theirs). */
  nodeN(opType: string, inputs: string[], outputCount: number, attributes: Record<string, Attribute> = {}, names?: string[], domain = ''): string[] {
    const id = this.counter++;
    const outputs = names ?? Array.from({ length: outputCount }, (_, i) => `${this.prefix}${this.phase[0]}${id}_${opType}${outputCount > 1 ? `_${i}` : ''}`);
    if (domain) this.domains.add(domain);
    const type: ElemType =
      opType === 'DequantizeLinear' || opType === 'MatMulNBits' || opType === 'If' ? 'float' : opType === 'Shape' ? 'int64' : opType === 'Equal' ? 'bool' : opType === 'Where' ? (this.types.get(inputs[1]) ?? 'float') : opType === 'Cast' ? castType(attributes.to as number) : opType === 'ConstantOfShape' ? 'float' : (this.types.get(inputs[0]) ?? 'float');
    for (const out of outputs) {
      this.types.set(out, type);
      this.producedIn.set(out, this.phase);
    }
    this.nodes.push({
      phase: this.phase,
      proto: { name: `${this.prefix}${opType}_${id}`, opType, input: inputs, output: outputs, attribute: Object.entries(attributes).map(([k, v]) => attribute(k, v)), ...(domain ? { domain } : {}) },
    });
    return outputs;
  }

  node(opType: string, inputs: string[], attributes: Record<string, Attribute> = {}, name?: string): string {
    return this.nodeN(opType, inputs, 1, attributes, name === undefined ? undefined : [name])[0];
  }

  /**
   * A subgraph (an If's branch) that `build` writes in a builder of its own and returns the
   * outputs of (each declared with the type it was made with): it reads this graph's tensors by
   * name, which onnxruntime hands it without a copy.
   */
  subgraph(prefix: string, build: (g: TrainingGraphBuilder) => string[]): onnxProto.onnx.IGraphProto {
    const sub = new TrainingGraphBuilder(this.precision, `${this.prefix}${prefix}.`, this.types);
    const outputs = build(sub);
    const nodes = sub.nodes.map((n) => n.proto);
    const used = namesRead(nodes);
    for (const domain of sub.domains) this.domains.add(domain);
    return {
      name: `${this.prefix}${prefix}`,
      node: nodes,
      initializer: [...sub.initializers.values()].filter((t) => used.has(t.name!)),
      output: outputs.map((name) => valueInfo(name, this.dataType(this.types.get(name) ?? 'float'))),
    };
  }

  /** A Cast to the graph's float type. */
  toFloat(tensor: string): string {
    return this.node('Cast', [tensor], { to: this.floatType });
  }

  /** A float zero-filled tensor of the given int64 shape. */
  zeros(shape: string): string {
    const value = { name: 'value', dims: [1], dataType: this.floatType, rawData: new Uint8Array(this.precision === 'float64' ? 8 : 4) };
    return this.node('ConstantOfShape', [shape], { value: { tensor: value } });
  }

  private dataType(type: ElemType): number {
    return type === 'float' ? this.floatType : type === 'float16' ? DataType.FLOAT16 : type === 'int64' ? DataType.INT64 : type === 'uint8' ? DataType.UINT8 : DataType.BOOL;
  }

  /** Every node in one model (no forward/backward cut): its inputs, and the outputs declared. */
  encodeOne(name: string): { model: Uint8Array; inputs: string[] } {
    const nodes = this.nodes.map((n) => n.proto);
    const used = namesRead(nodes);
    const declare = (d: Declared) => valueInfo(d.name, this.dataType(d.type), d.shape);
    const model = onnx.ModelProto.encode(
      onnx.ModelProto.create({
        irVersion: 10,
        producerName: 'webgrpo training graph',
        opsetImport: [{ domain: '', version: TRAINING_OPSET }, ...[...this.domains].map((domain) => ({ domain, version: 1 }))],
        graph: { name, node: nodes, input: this.inputs.map(declare), output: this.outputs.map(declare), initializer: [...this.initializers.values()].filter((t) => used.has(t.name!)) },
      }),
    ).finish();
    return { model, inputs: this.inputs.map((i) => i.name) };
  }

  encode(name: string): TrainingModels {
    const backwardReads = new Set<string>();
    for (const { phase, proto } of this.nodes) if (phase === 'backward') for (const i of proto.input ?? []) if (i) backwardReads.add(i);
    const forwardInputs = this.inputs.filter((i) => i.phase === 'forward');
    const forwardOutputs = this.outputs.filter((o) => o.phase === 'forward');
    const declaredOutputs = new Set(forwardOutputs.map((o) => o.name));
    const saved = [...backwardReads].filter((t) => this.producedIn.get(t) === 'forward' && !forwardInputs.some((i) => i.name === t) && !this.initializers.has(t));
    const shared = forwardInputs.filter((i) => backwardReads.has(i.name));
    const declare = (d: { name: string; type?: ElemType; shape?: Dim[] }) => {
      const type = d.type ?? this.types.get(d.name) ?? 'float';
      return valueInfo(d.name, this.dataType(type), d.shape);
    };
    const model = (phase: Phase, inputs: onnxProto.onnx.IValueInfoProto[], outputs: onnxProto.onnx.IValueInfoProto[]) => {
      const nodes = this.nodes.filter((n) => n.phase === phase).map((n) => n.proto);
      const used = namesRead(nodes);
      return onnx.ModelProto.encode(
        onnx.ModelProto.create({
          irVersion: 10,
          producerName: 'webgrpo training graph',
          opsetImport: [{ domain: '', version: TRAINING_OPSET }, ...[...this.domains].map((domain) => ({ domain, version: 1 }))],
          graph: { name: `${name}_${phase}`, node: nodes, input: inputs, output: outputs, initializer: [...this.initializers.values()].filter((t) => used.has(t.name!)) },
        }),
      ).finish();
    };
    const forward = model('forward', forwardInputs.map(declare), [...forwardOutputs.map(declare), ...saved.filter((t) => !declaredOutputs.has(t)).map((t) => declare({ name: t }))]);
    const backward = model(
      'backward',
      [...saved.map((t) => declare({ name: t })), ...shared.map(declare), ...this.inputs.filter((i) => i.phase === 'backward').map(declare)],
      this.outputs.filter((o) => o.phase === 'backward').map(declare),
    );
    const backwardOnly = this.inputs.filter((i) => i.phase === 'backward').map((i) => i.name);
    return { forward, backward, saved, sharedInputs: shared.map((i) => i.name), forwardInputs: forwardInputs.map((i) => i.name), backwardInputs: [...saved, ...shared.map((i) => i.name), ...backwardOnly] };
  }
}

/** Every name `nodes` read, their subgraphs' reads of outer tensors included. */
function namesRead(nodes: onnxProto.onnx.INodeProto[]): Set<string> {
  const names = new Set<string>();
  for (const node of nodes) {
    for (const input of node.input ?? []) names.add(input);
    for (const a of node.attribute ?? []) if (a.g) for (const inner of namesRead(a.g.node ?? [])) names.add(inner);
  }
  return names;
}

function castType(to: number): ElemType {
  return to === DataType.INT64 ? 'int64' : to === DataType.BOOL ? 'bool' : 'float';
}


