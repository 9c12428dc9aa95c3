/**
 * The frozen weights of a Llama-family decoder, read from its ONNX graph's initializers.
 *
 * The graph says which tensor is which: the embedding is the table a Gather reads `input_ids`
 * from, each projection is the constant input of a MatMul (named after its module by the exporter,
 * as Optimum and webgrpo's builder both do: `/model/layers.0/self_attn/q_proj/MatMul` or
 * `model.layers.0.self_attn.q_proj.weight`), a bias is the constant an Add puts on that MatMul's
 * output, and the head is the projection found walking back from `logits` (the embedding through a
 * Transpose when tied). Norm weights are only multiplied in, so they are found by their module
 * names (`input_layernorm`, `post_attention_layernorm`, `q_norm`, `k_norm`, `model.norm`), which
 * every exporter keeps. fp32, fp16 and bf16 initializers are read (fp16 and bf16 widened to
 * float32, and marked as such for an engine that keeps them at 16 bits), inline or from external
 * data files; 4-bit MatMulNBits projections stay packed.
 */
import { ModelLoadError, UnsupportedError } from '../errors.js';
import { ownAlignedPiece, ownBytes } from '../policy/onnx/protobuf.js';
import { bfloat16ToFloat, halfToFloat } from '../policy/onnx/half.js';
import { ropeScalingOf } from '../policy/onnx/structure/rope.js';
import type { Q4Matrix } from './decoder.js';
import { LORA_MODULES, moduleDims, type DecoderLayerWeights, type HalfType, type DecoderShape, type DecoderWeights, type LoraModule, type Projection } from './decoder.js';

type TensorProto = import('onnx-proto').onnx.TensorProto;
type NodeProto = import('onnx-proto').onnx.NodeProto;

export interface ReadWeightsOptions {
  /** The model's config.json (heads, key/value heads, head_dim, rope_theta, rms_norm_eps). */
  config: Record<string, unknown>;
  /** External data files by the name the graph refers to (`model.onnx_data`). */
  externalData?: Record<string, Uint8Array>;
}

const MODULE_PATTERN = /layers[./_](\d+)[./_](?:self_attn|mlp)[./_](q|k|v|o|gate|up|down)_proj/;
const PASS_THROUGH = new Set(['Cast', 'Identity', 'Reshape', 'Squeeze', 'Unsqueeze', 'Flatten', 'Mul', 'Div', 'Add', 'Sub', 'Tanh']);

/** The graph's initializers and who produces and consumes each value, with readers that widen to float32. */
interface GraphIndex {
  nodes: NodeProto[];
  initializers: Map<string, TensorProto>;
  producers: Map<string, NodeProto>;
  consumers: Map<string, NodeProto[]>;
  externalData: Record<string, Uint8Array> | undefined;
  read(name: string): Float32Array;
  dims(name: string): number[];
  half(name: string): HalfType | undefined;
}

/** The decoder's weights read out of an ONNX export by its tensor names (Optimum's or onnxruntime-genai's), with the shape from config.json: what LoRA trains on when `loraModel` is given the 'names' reader. */
export async function readDecoderWeights(model: Uint8Array, options: ReadWeightsOptions): Promise<DecoderWeights> {
  const { onnx } = (await import('onnx-proto')).default;
  const graph = onnx.ModelProto.decode(model).graph as import('onnx-proto').onnx.GraphProto | null;
  if (!graph) throw new ModelLoadError('The ONNX file has no graph.');
  const index = indexGraph(graph.node as NodeProto[], graph.initializer as TensorProto[], options.externalData);

  const embedNode = index.nodes.find((n) => n.opType === 'Gather' && index.initializers.has(n.input[0]) && fedBy(n.input[1], 'input_ids', index.producers));
  if (!embedNode) throw new ModelLoadError('No Gather reads the embedding table with input_ids; this is not a decoder export webgrpo can train LoRA on.');
  const [vocabSize, hiddenSize] = index.dims(embedNode.input[0]);
  const shape = shapeOf(options.config, vocabSize, hiddenSize);

  const layers = readLayers(index, shape, readProjections(index));
  const finalNorm = initializerByName(index, /(^|[./])norm\.weight$/, 'final norm (model.norm)')!;
  const { lmHead, lmHeadHalf } = readHead(index, embedNode.input[0], hiddenSize, vocabSize);
  const embeddingHalf = index.half(embedNode.input[0]);
  return {
    shape,
    embedding: index.read(embedNode.input[0]),
    layers,
    finalNorm,
    ...(lmHead ? { lmHead } : {}),
    ...(embeddingHalf ? { embeddingHalf } : {}),
    ...(lmHeadHalf ? { lmHeadHalf } : {}),
  };
}

function indexGraph(nodes: NodeProto[], tensors: TensorProto[], externalData: Record<string, Uint8Array> | undefined): GraphIndex {
  const initializers = new Map<string, TensorProto>(tensors.map((t) => [t.name, t]));
  const producers = new Map<string, NodeProto>();
  const consumers = new Map<string, NodeProto[]>();
  for (const node of nodes) {
    for (const out of node.output) producers.set(out, node);
    for (const input of node.input) consumers.set(input, [...(consumers.get(input) ?? []), node]);
  }
  return {
    nodes,
    initializers,
    producers,
    consumers,
    externalData,
    read: (name) => floats(initializers.get(name)!, externalData),
    dims: (name) => initializers.get(name)!.dims.map(Number),
    half: (name) => halfType(initializers.get(name)!),
  };
}

/** Every projection MatMul (or MatMulNBits) named after its module, by `layer.module`, with the bias an Add puts on its output. */
function readProjections(index: GraphIndex): Map<string, Projection> {
  const { initializers, consumers, dims, read } = index;
  const projections = new Map<string, Projection>();
  for (const node of index.nodes) {
    if ((node.opType !== 'MatMul' && node.opType !== 'MatMulNBits') || !initializers.has(node.input[1])) continue;
    const match = MODULE_PATTERN.exec(node.name) ?? MODULE_PATTERN.exec(node.input[1]);
    if (!match) continue;
    const key = `${match[1]}.${match[2]}_proj`;
    const quantized = node.opType === 'MatMulNBits' ? readQ4(node, initializers, index.externalData, read) : undefined;
    const [inDim, outDim] = quantized ? [quantized.K, quantized.N] : dims(node.input[1]);
    const bias = (consumers.get(node.output[0]) ?? []).find((n) => n.opType === 'Add' && n.input.some((i) => initializers.has(i) && dims(i).reduce((a, b) => a * b, 1) === outDim));
    const biasName = bias?.input.find((i) => initializers.has(i));
    const halfWeight = quantized ? undefined : index.half(node.input[1]);
    projections.set(key, { inDim, outDim, weight: quantized ?? read(node.input[1]), initializer: node.input[1], ...(biasName ? { bias: read(biasName) } : {}), ...(halfWeight ? { half: halfWeight } : {}) });
  }
  return projections;
}

/** Each layer's seven projections, checked against the shape config.json implies, and its norms by module name. */
function readLayers(index: GraphIndex, shape: DecoderShape, projections: Map<string, Projection>): DecoderLayerWeights[] {
  const layers: DecoderLayerWeights[] = [];
  for (let i = 0; i < shape.numLayers; i++) {
    const at = `layers[./_]${i}[./_]`;
    const layer: Partial<Record<LoraModule, Projection>> = {};
    for (const module of LORA_MODULES) {
      const projection = projections.get(`${i}.${module}`);
      if (!projection) throw new ModelLoadError(`Layer ${i} has no ${module} MatMul in the ONNX graph.`);
      const want = moduleDims(shape, module);
      if (projection.inDim !== want.inDim || projection.outDim !== want.outDim) {
        throw new ModelLoadError(`Layer ${i} ${module} is [${projection.inDim}, ${projection.outDim}]; config.json implies [${want.inDim}, ${want.outDim}].`);
      }
      layer[module] = projection;
    }
    layers.push({
      ...(layer as Record<LoraModule, Projection>),
      inputNorm: initializerByName(index, new RegExp(`${at}input_layernorm\\.weight$`), `layer ${i} input_layernorm`)!,
      postNorm: initializerByName(index, new RegExp(`${at}post_attention_layernorm\\.weight$`), `layer ${i} post_attention_layernorm`)!,
      qNorm: initializerByName(index, new RegExp(`${at}self_attn[./_]q_norm\\.weight$`)),
      kNorm: initializerByName(index, new RegExp(`${at}self_attn[./_]k_norm\\.weight$`)),
    });
  }
  return layers;
}

/** The first initializer whose name matches; a missing one is an error when `required` names what it is, else undefined. */
function initializerByName(index: GraphIndex, pattern: RegExp, required?: string): Float32Array | undefined {
  const name = [...index.initializers.keys()].find((n) => pattern.test(n));
  if (!name) {
    if (required) throw new ModelLoadError(`The ONNX graph has no ${required} weight (an initializer matching ${pattern}).`);
    return undefined;
  }
  return index.read(name);
}

/** The LM head found walking back from `logits`: a constant matrix of its own, or nothing when it is the embedding transposed (tied). */
function readHead(index: GraphIndex, embedding: string, hiddenSize: number, vocabSize: number): { lmHead?: Float32Array; lmHeadHalf?: HalfType } {
  const head = findHead('logits', index.producers, index.initializers);
  if (!head) throw new ModelLoadError('Could not find the MatMul that produces "logits".');
  if (index.initializers.has(head.input[1])) {
    const [inDim, outDim] = index.dims(head.input[1]);
    if (inDim !== hiddenSize || outDim !== vocabSize) throw new ModelLoadError(`The LM head is [${inDim}, ${outDim}]; expected [${hiddenSize}, ${vocabSize}].`);
    const lmHeadHalf = index.half(head.input[1]);
    return { lmHead: index.read(head.input[1]), ...(lmHeadHalf ? { lmHeadHalf } : {}) };
  }
  const transpose = index.producers.get(head.input[1]);
  if (transpose?.opType !== 'Transpose' || transpose.input[0] !== embedding) {
    throw new ModelLoadError('The LM head is neither a constant matrix nor the transposed embedding.');
  }
  return {};
}

/** A 4-bit MatMulNBits weight, kept packed (the training graphs read it as MatMulNBits does). */
function readQ4(node: NodeProto, initializers: Map<string, TensorProto>, external: Record<string, Uint8Array> | undefined, read: (name: string) => Float32Array): Q4Matrix {
  const attribute = (name: string) => Number(node.attribute.find((a) => a.name === name)?.i ?? NaN);
  const K = attribute('K');
  const N = attribute('N');
  const bits = attribute('bits');
  const blockSize = attribute('block_size');
  if (bits !== 4) throw new UnsupportedError(`${node.name || node.input[1]}: MatMulNBits with ${bits} bits; 4-bit weights are supported.`);
  if (!(K > 0 && N > 0 && blockSize >= 16 && (blockSize & (blockSize - 1)) === 0)) throw new ModelLoadError(`${node.name || node.input[1]}: MatMulNBits needs K, N and a power-of-two block_size.`);
  if (node.input[4] || node.input[5]) throw new UnsupportedError(`${node.name || node.input[1]}: MatMulNBits with g_idx or a fused bias is not supported.`);
  const blocks = Math.ceil(K / blockSize);
  // Never a view into a larger buffer (a Node Buffer's slice is one): it would keep the whole model file alive beside the weights read out of it.
  const packed = ownBytes(bytesOf(initializers.get(node.input[1])!, external));
  if (packed.length !== N * blocks * (blockSize / 2)) throw new ModelLoadError(`${node.input[1]}: ${packed.length} packed bytes for N ${N}, K ${K}, block ${blockSize}.`);
  const scales = read(node.input[2]);
  if (scales.length !== N * blocks) throw new ModelLoadError(`${node.input[2]}: ${scales.length} scales for ${N * blocks} blocks.`);
  const zp = node.input[3];
  let zeroPoints: Uint8Array | undefined;
  if (zp) {
    const t = initializers.get(zp);
    if (!t || t.dataType !== UINT8) throw new UnsupportedError(`${zp}: MatMulNBits zero points must be packed uint8 initializers.`);
    zeroPoints = ownBytes(bytesOf(t, external));
    if (zeroPoints.length !== N * Math.ceil(blocks / 2)) throw new ModelLoadError(`${zp}: ${zeroPoints.length} zero-point bytes for N ${N} and ${blocks} blocks.`);
  }
  return { kind: 'q4', K, N, blockSize, packed, scales, ...(zeroPoints ? { zeroPoints } : {}) };
}

function shapeOf(config: Record<string, unknown>, vocabSize: number, hiddenSize: number): DecoderShape {
  const num = (key: string, fallback?: number): number => {
    const value = config[key] ?? fallback;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new ModelLoadError(`config.json has no numeric ${key}.`);
    return value;
  };
  if (num('hidden_size') !== hiddenSize) throw new ModelLoadError(`config.json says hidden_size ${num('hidden_size')}; the embedding is ${hiddenSize} wide.`);
  const numHeads = num('num_attention_heads');
  const ropeScaling = ropeScalingOf(config);
  return {
    vocabSize,
    hiddenSize,
    intermediateSize: num('intermediate_size'),
    numLayers: num('num_hidden_layers'),
    numHeads,
    numKvHeads: num('num_key_value_heads', numHeads),
    headDim: num('head_dim', hiddenSize / numHeads),
    ropeTheta: num('rope_theta', 10000),
    ...(ropeScaling ? { ropeScaling } : {}),
    rmsNormEps: num('rms_norm_eps', 1e-6),
  };
}

/** Whether `tensor` is `source` or comes from it through casts and reshapes. */
function fedBy(tensor: string, source: string, producers: Map<string, NodeProto>): boolean {
  for (let depth = 0; depth < 4; depth++) {
    if (tensor === source) return true;
    const node = producers.get(tensor);
    if (!node || !['Cast', 'Identity', 'Reshape', 'Unsqueeze', 'Squeeze'].includes(node.opType)) return false;
    tensor = node.input[0];
  }
  return false;
}

function findHead(logits: string, producers: Map<string, NodeProto>, initializers: Map<string, TensorProto>): NodeProto | undefined {
  let tensor = logits;
  for (let depth = 0; depth < 12; depth++) {
    const node = producers.get(tensor);
    if (!node) return undefined;
    if (node.opType === 'MatMul') return node;
    if (!PASS_THROUGH.has(node.opType)) return undefined;
    const next = node.input.find((i) => i && !initializers.has(i));
    if (!next) return undefined;
    tensor = next;
  }
  return undefined;
}

const FLOAT = 1;
const UINT8 = 2;
const FLOAT16 = 10;
const BFLOAT16 = 16;

/** An initializer's raw bytes, inline or from its external data file. */
function bytesOf(t: TensorProto, external: Record<string, Uint8Array> | undefined): Uint8Array {
  // DataLocation.EXTERNAL
  if (t.dataLocation !== 1) return t.rawData;
  const entry = Object.fromEntries(t.externalData.map((e) => [e.key, e.value]));
  const file = external?.[entry.location ?? ''];
  if (!file) throw new ModelLoadError(`Initializer ${t.name} is in external file "${entry.location}", which was not given.`);
  const offset = Number(entry.offset ?? 0);
  return file.subarray(offset, offset + Number(entry.length ?? file.length - offset));
}

function halfType(t: TensorProto): HalfType | undefined {
  return t.dataType === FLOAT16 ? 'float16' : t.dataType === BFLOAT16 ? 'bfloat16' : undefined;
}

/** A float initializer as float32 (fp16 and bf16 widened), from raw, typed or external data. */
function floats(t: TensorProto, external: Record<string, Uint8Array> | undefined): Float32Array {
  const count = t.dims.reduce((a: number, d) => a * Number(d), 1);
  if (t.dataType === FLOAT && t.floatData.length === count) return Float32Array.from(t.floatData);
  const raw = bytesOf(t, external);
  // A piece read on its own (graph-index.ts says why) is used as it is.
  if (t.dataType === FLOAT && raw.length === count * 4 && ownAlignedPiece(raw)) return new Float32Array(raw.buffer, 0, count);
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const out = new Float32Array(count);
  if (t.dataType === FLOAT && raw.length === count * 4) {
    for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
  } else if (t.dataType === FLOAT16 && raw.length === count * 2) {
    for (let i = 0; i < count; i++) out[i] = halfToFloat(view.getUint16(i * 2, true));
  } else if (t.dataType === BFLOAT16 && raw.length === count * 2) {
    for (let i = 0; i < count; i++) out[i] = bfloat16ToFloat(view.getUint16(i * 2, true));
  } else if (t.dataType === FLOAT16 && t.int32Data.length === count) {
    for (let i = 0; i < count; i++) out[i] = halfToFloat(t.int32Data[i]);
  } else {
    throw new ModelLoadError(`Initializer ${t.name} has data type ${t.dataType} or a size that does not match its shape; fp32, fp16 and bf16 are read.`);
  }
  return out;
}
