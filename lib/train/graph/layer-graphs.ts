/**
 * LoRA's training graphs, one decoder layer (and the head) at a time, so a step's memory is the
 * frozen weights once plus one layer's activations, never the whole decoder's:
 *
 *   layer forward    x, a layer's weights and adapter -> the layer's output
 *   layer backward   x, dy, the same weights -> dx and d A, d B   (the layer's forward recomputed
 *                    inside: only each layer's input is kept between the passes)
 *   head forward     rows of the last hidden state -> log p(target), H      (a chunk of rows at a
 *                    (and d log p(target) / d hidden, for a backward         time: [rows, vocab])
 *                    without an entropy term)
 *   head backward    the same rows, dlogp, dH -> d hidden
 *
 * Every weight is a graph input, so the layers of one structure share one session (a model's 30
 * layers build as one small graph, once), the weights live once in the caller's arrays in their
 * stored precision (fp16 widened inside each run, 4-bit blocks stay packed), and an update needs
 * no new graph.
 */
import { LORA_MODULES, type DecoderLayerWeights, type DecoderShape, type LoraModule, type Q4Matrix } from '../../weights/decoder.js';
import { dequantize } from '../../policy/onnx/structure/read-weights.js';
import { TrainingGraphBuilder, type Precision } from './builder.js';
import { decoderOps, floatProduct, halfProduct, q4Product, type LayerOps, type ProjectionOps } from './decoder-ops.js';
import { GRAPH_IO, type LoraGraphConfig } from './lora-graph.js';

/** The per-layer and head graphs' own input and output names (the batch inputs keep GRAPH_IO's). */
export const LAYER_IO = {
  x: 'x',
  out: 'out',
  dy: 'dy',
  dx: 'dx',
  hidden: 'hidden',
  dHidden: 'd_hidden',
  /** Per scored row, d log p(target) / d hidden (the head's `gradient` graph). */
  logpGradient: 'd_logp_d_hidden',
  finalNorm: 'norm.final',
  head: 'head',
} as const;

export const layerWeightName = (m: LoraModule) => `w.${m}`;
export const adapterInput = (m: LoraModule, which: 'A' | 'B') => `${which}.${m}`;
export const adapterGrad = (m: LoraModule, which: 'A' | 'B') => `grad.${which}.${m}`;

/** A graph and the names of its inputs (what a run must feed). */
export interface Graph {
  model: Uint8Array;
  inputs: string[];
}

export interface LayerGraphs {
  forward: Graph;
  /**
   * The backward with the layer's forward recomputed inside, from its input. The first layer runs
   * it too and its dx (toward the embedding, which LoRA does not train) is dropped: a graph of its
   * own would save that one product but hold an onnxruntime arena as large as this one's.
   */
  backward: Graph;
  /** The pair that keeps the activations instead: the forward also outputs `saved` (what a matmul or softmax made), which the backward reads. */
  keep: { forward: Graph; backward: Graph; saved: string[] };
}

/**
 * Whether 4-bit blocks can stay packed in the graphs: float32 (MatMulNBits has no double kernel),
 * whole blocks (the unpacked W^T is then exactly K values), and zero points that pack a row's
 * blocks without padding.
 */
export function packable(w: Q4Matrix, precision: Precision): boolean {
  const blocks = w.K / w.blockSize;
  return precision === 'float32' && Number.isInteger(blocks) && (!w.zeroPoints || blocks % 2 === 0);
}

/** What makes two layers' graphs differ: fp16 or 4-bit projections (and their blocks), biases, q/k norms. Layers of one signature share sessions. */
export function layerSignature(layer: DecoderLayerWeights, precision: Precision): string {
  const parts = LORA_MODULES.map((m) => {
    const { weight, bias } = layer[m];
    const stored = weight instanceof Float32Array ? 'f' : weight.kind === 'float16' ? 'h' : packable(weight, precision) ? `q4:${weight.blockSize}:${weight.zeroPoints ? 'z' : ''}` : 'f';
    return `${stored}${bias ? '+b' : ''}`;
  });
  return [...parts, layer.qNorm ? 'qn' : '', layer.kNorm ? 'kn' : ''].join(',');
}

/** The inputs a layer's weights enter its graphs under, and their values (in decoder order). */
export interface LayerInput {
  name: string;
  type: 'float' | 'float16' | 'uint8';
  data: Float32Array | Uint16Array | Uint8Array;
  dims: number[];
}

export function layerWeightInputs(layer: DecoderLayerWeights, shape: DecoderShape, precision: Precision): LayerInput[] {
  const { hiddenSize: H, headDim: D } = shape;
  const out: LayerInput[] = [
    { name: 'norm.input', type: 'float', data: layer.inputNorm, dims: [H] },
    { name: 'norm.post', type: 'float', data: layer.postNorm, dims: [H] },
  ];
  if (layer.qNorm) out.push({ name: 'norm.q', type: 'float', data: layer.qNorm, dims: [D] });
  if (layer.kNorm) out.push({ name: 'norm.k', type: 'float', data: layer.kNorm, dims: [D] });
  for (const m of LORA_MODULES) {
    const { weight, bias, inDim, outDim } = layer[m];
    const name = layerWeightName(m);
    if (weight instanceof Float32Array) out.push({ name, type: 'float', data: weight, dims: [inDim, outDim] });
    else if (weight.kind === 'float16') out.push({ name, type: 'float16', data: weight.bits, dims: [inDim, outDim] });
    else if (!packable(weight, precision)) out.push({ name, type: 'float', data: dequantize(weight), dims: [inDim, outDim] });
    else {
      const blocks = weight.K / weight.blockSize;
      out.push({ name: `${name}.q4`, type: 'uint8', data: weight.packed, dims: [weight.N, blocks, weight.blockSize / 2] });
      out.push({ name: `${name}.scales`, type: 'float', data: weight.scales, dims: [weight.N * blocks] });
      if (weight.zeroPoints) out.push({ name: `${name}.zeros`, type: 'uint8', data: weight.zeroPoints, dims: [weight.zeroPoints.length] });
    }
    if (bias) out.push({ name: `b.${m}`, type: 'float', data: bias, dims: [outDim] });
  }
  return out;
}

/** The layer's tensors as inputs of the graph `g` is building. */
function layerOps(g: TrainingGraphBuilder, layer: DecoderLayerWeights, shape: DecoderShape, lora: LoraGraphConfig): LayerOps {
  const inputs = new Map(layerWeightInputs(layer, shape, g.precision).map((i) => [i.name, i]));
  const input = (name: string) => {
    const i = inputs.get(name)!;
    return g.input(name, i.type, i.dims);
  };
  const targets = new Set(lora.targetModules);
  const proj = Object.fromEntries(
    LORA_MODULES.map((m): [LoraModule, ProjectionOps] => {
      const { weight, bias, inDim, outDim } = layer[m];
      const name = layerWeightName(m);
      const stored = inputs.get(name)?.type;
      const product = stored === 'float' ? floatProduct(g, input(name)) : stored === 'float16' ? halfProduct(g, input(name)) : q4Product(g, weight as Q4Matrix, { packed: input(`${name}.q4`), scales: input(`${name}.scales`), ...(inputs.has(`${name}.zeros`) ? { zeros: input(`${name}.zeros`) } : {}) });
      const adapter = targets.has(m)
        ? { A: g.input(adapterInput(m, 'A'), 'float', [lora.r, inDim]), B: g.input(adapterInput(m, 'B'), 'float', [outDim, lora.r]), gradA: adapterGrad(m, 'A'), gradB: adapterGrad(m, 'B') }
        : undefined;
      return [m, { inDim, outDim, product, ...(bias ? { bias: input(`b.${m}`) } : {}), ...(adapter ? { adapter } : {}) }];
    }),
  ) as Record<LoraModule, ProjectionOps>;
  return { inputNorm: input('norm.input'), postNorm: input('norm.post'), ...(layer.qNorm ? { qNorm: input('norm.q') } : {}), ...(layer.kNorm ? { kNorm: input('norm.k') } : {}), proj };
}

/** The forward and backward graphs of layers shaped like `layer`. */
export function buildLayerGraphs(layer: DecoderLayerWeights, shape: DecoderShape, lora: LoraGraphConfig, precision: Precision): LayerGraphs {
  const { hiddenSize: H, headDim: D } = shape;
  /** A builder with the layer's inputs declared: x, the batch's rotary tables and bias, the weights and adapter. */
  const begin = () => {
    const g = new TrainingGraphBuilder(precision);
    const x = g.input(LAYER_IO.x, 'float', ['tokens', H]);
    const cos = g.input(GRAPH_IO.cos, 'float', ['batch', 1, 'sequence', D]);
    const sin = g.input(GRAPH_IO.sin, 'float', ['batch', 1, 'sequence', D]);
    const bias = g.input(GRAPH_IO.bias, 'float', ['batch', 1, 'sequence', 'sequence']);
    const ops = decoderOps(g, shape, lora);
    return { g, x, ops, w: layerOps(g, layer, shape, lora), attention: ops.attention(cos, sin, bias) };
  };
  const output = (g: TrainingGraphBuilder, tensor: string, name: string) => g.output(g.node('Identity', [tensor], {}, name), ['tokens', H]);
  const forward = (): Graph => {
    const { g, x, ops, w, attention } = begin();
    output(g, ops.layerForward(w, x, attention, true).out!, LAYER_IO.out);
    return g.encodeOne('layer_forward');
  };
  const backward = (): Graph => {
    const { g, x, ops, w, attention } = begin();
    const { saved } = ops.layerForward(w, x, attention, false);
    output(g, ops.layerBackward(w, saved, g.input(LAYER_IO.dy, 'float', ['tokens', H]), attention), LAYER_IO.dx);
    return g.encodeOne('layer_backward');
  };
  const keep = () => {
    const { g, x, ops, w, attention } = begin();
    const { out, saved } = ops.layerForward(w, x, attention, true);
    output(g, out!, LAYER_IO.out);
    g.phase = 'backward';
    output(g, ops.layerBackward(w, ops.recomputeCheap(w, saved, attention), g.input(LAYER_IO.dy, 'float', ['tokens', H]), attention), LAYER_IO.dx);
    const models = g.encode('layer_keep');
    return { forward: { model: models.forward, inputs: models.forwardInputs }, backward: { model: models.backward, inputs: models.backwardInputs }, saved: models.saved };
  };
  return { forward: forward(), backward: backward(), keep: keep() };
}

/**
 * The head's graphs on `rows` scored rows of the last hidden state; `tied`: the head is the
 * embedding [V, H], else [H, V]. `gradient` is the forward that also outputs each row's
 * d log p(target) / d hidden, so a backward without an entropy term needs no head run of its own.
 */
export function buildHeadGraphs(shape: DecoderShape, tied: boolean, precision: Precision): { forward: Graph; gradient: Graph; backward: Graph } {
  const { hiddenSize: H, vocabSize: V } = shape;
  const build = (kind: 'forward' | 'gradient' | 'backward'): Graph => {
    const g = new TrainingGraphBuilder(precision);
    const hidden = g.input(LAYER_IO.hidden, 'float', ['rows', H]);
    const finalNorm = g.input(LAYER_IO.finalNorm, 'float', [H]);
    const head = g.input(LAYER_IO.head, 'float', tied ? [V, H] : [H, V]);
    const targets = g.input(GRAPH_IO.targets, 'int64', ['rows']);
    const invT = g.input(GRAPH_IO.invTemperature, 'float', []);
    const ops = decoderOps(g, shape);
    const inputs = { hidden, finalNorm, head, tied, targets, invT };
    const forward = ops.headForward(hidden, finalNorm, head, tied, targets, invT, { logps: GRAPH_IO.logps, entropies: GRAPH_IO.entropies });
    if (kind !== 'backward') {
      g.output(GRAPH_IO.logps, ['rows']);
      g.output(GRAPH_IO.entropies, ['rows']);
      if (kind === 'gradient') g.output(g.node('Identity', [ops.headLogpGradient(inputs, forward)], {}, LAYER_IO.logpGradient), ['rows', H]);
    } else {
      const dlogps = g.input(GRAPH_IO.dlogps, 'float', ['rows']);
      const dentropies = g.input(GRAPH_IO.dentropies, 'float', ['rows']);
      const { dHidden } = ops.headBackward(inputs, forward, dlogps, dentropies);
      g.output(g.node('Identity', [dHidden], {}, LAYER_IO.dHidden), ['rows', H]);
    }
    return g.encodeOne(`head_${kind}`);
  };
  return { forward: build('forward'), gradient: build('gradient'), backward: build('backward') };
}

/** The inputs and outputs of the head that holds its table (buildHeadTableGraph). */
export const TABLE_HEAD_IO = {
  /** Which run: HEAD_TABLE_RUN's values. */
  run: 'run',
  ids: 'ids',
  /** [tokens or rows, H]: the embedding rows (embed), d log p / d hidden (gradient), d loss / d hidden (backward). */
  matrix: 'out.rows',
  /** [rows]: log p(target) (forward, gradient). */
  logps: 'out.logps',
  /** [rows]: the entropy (forward, gradient). */
  entropies: 'out.entropies',
  /** The external data the session is given: the embedding, and the untied head. */
  embeddingData: 'embedding.bin',
  headData: 'lm_head.bin',
} as const;

/** The runs the head that holds its table takes, as its `run` input. */
export const HEAD_TABLE_RUN = { embed: 0, forward: 1, gradient: 2, backward: 3 } as const;

/**
 * buildHeadGraphs' three graphs and the embedding's row lookup in one float32 graph that holds
 * the embedding (and an untied head) itself, as external data: one session keeps the table once,
 * where the three graphs take it as an input on every run. An If on the `run` input picks the
 * branch, so only that branch runs (onnxruntime runs every node of a graph, asked for its
 * outputs or not); the inputs a branch does not read are fed one row of anything.
 */
export function buildHeadTableGraph(shape: DecoderShape, tied: boolean): Graph {
  const { hiddenSize: H, vocabSize: V } = shape;
  const io = TABLE_HEAD_IO;
  const g = new TrainingGraphBuilder('float32');
  const embedding = g.externalFloats('table.embedding', [V, H], io.embeddingData);
  const head = tied ? embedding : g.externalFloats('table.lm_head', [H, V], io.headData);
  const run = g.input(io.run, 'int64', []);
  const ids = g.input(io.ids, 'int64', ['tokens']);
  const finalNorm = g.input(LAYER_IO.finalNorm, 'float', [H]);
  const invT = g.input(GRAPH_IO.invTemperature, 'float', []);
  const hidden = g.input(LAYER_IO.hidden, 'float', ['rows', H]);
  const targets = g.input(GRAPH_IO.targets, 'int64', ['rows']);
  const dlogps = g.input(GRAPH_IO.dlogps, 'float', ['rows']);
  const dentropies = g.input(GRAPH_IO.dentropies, 'float', ['rows']);
  // Every branch gives a matrix and two vectors; what a run does not make is the final norm's few values.
  const filler = (b: TrainingGraphBuilder) => ({ matrix: b.node('Unsqueeze', [finalNorm, b.int64s([0])]), vector: b.node('Identity', [finalNorm]) });
  const embed = (b: TrainingGraphBuilder): string[] => {
    const { vector } = filler(b);
    return [b.node('Gather', [embedding, ids], { axis: 0 }), vector, vector];
  };
  const headBranch = (kind: 'forward' | 'gradient' | 'backward') => (b: TrainingGraphBuilder): string[] => {
    const ops = decoderOps(b, shape);
    const inputs = { hidden, finalNorm, head, tied, targets, invT };
    const forward = ops.headForward(hidden, finalNorm, head, tied, targets, invT, { logps: b.fresh('logps'), entropies: b.fresh('entropies') });
    if (kind === 'backward') {
      const { vector } = filler(b);
      return [ops.headBackward(inputs, forward, dlogps, dentropies).dHidden, vector, vector];
    }
    return [kind === 'gradient' ? ops.headLogpGradient(inputs, forward) : filler(b).matrix, forward.logps, forward.entropies];
  };
  /** `when` if the run is `which`, else `otherwise`. */
  const choose = (b: TrainingGraphBuilder, which: keyof typeof HEAD_TABLE_RUN, when: (b: TrainingGraphBuilder) => string[], otherwise: (b: TrainingGraphBuilder) => string[]) =>
    b.nodeN('If', [b.node('Equal', [run, b.int64s([HEAD_TABLE_RUN[which]], [])])], 3, {
      then_branch: { graph: b.subgraph(`${which}.then`, when) },
      else_branch: { graph: b.subgraph(`${which}.else`, otherwise) },
    });
  const outputs = choose(g, 'embed', embed, (b) => choose(b, 'backward', headBranch('backward'), (c) => choose(c, 'gradient', headBranch('gradient'), headBranch('forward'))));
  g.output(g.node('Identity', [outputs[0]], {}, io.matrix), ['n', H]);
  g.output(g.node('Identity', [outputs[1]], {}, io.logps), ['m']);
  g.output(g.node('Identity', [outputs[2]], {}, io.entropies), ['m']);
  return g.encodeOne('head_table');
}
