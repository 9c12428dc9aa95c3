/**
 * The decoder found in an ONNX graph by its structure, never by its names, so the exports of
 * onnxruntime-genai (`attn`, `final_norm_layernorm`), of Optimum / transformers.js (anonymous
 * `onnx::MatMul_1234` initializers, Gemm with transposed weights) and webgrpo's own builder all
 * read the same way, in fp32, fp16 / bf16 and 4-bit MatMulNBits:
 *
 *   embedding   the Gather that reads a constant [vocab, hidden] table with `input_ids`
 *   head        the MatMul (Gemm, MatMulNBits) walked back to from the `logits` output; tied
 *               when its weight is the embedding table transposed
 *   projections every MatMul with a constant weight, in graph order, grouped by the tensor they
 *               read: per layer three reading one normed input (q, k, v), one (o), two (gate,
 *               up), one (down)
 *   q / k / v   by where each output meets attention: a GroupQueryAttention's inputs 0, 1, 2, or
 *               the two attention MatMuls (q on the left of q k^T, k on its right, v on the right
 *               of the one fed by the Softmax)
 *   gate / up   the one whose output goes through a Sigmoid (SiLU) is the gate
 *   norms       the constant [hidden] scale of the RMS norm producing each group's input
 *               (a Mul, SimplifiedLayerNormalization or SkipSimplifiedLayerNormalization); q/k
 *               norms are a [head_dim] scale on the way from q or k to attention
 *   rotary      a rotate-half (Neg) or RotaryEmbedding on the query's way, or GroupQueryAttention's
 *               do_rotary; its base comes from config.json
 *
 * A graph that does not have one of these parts is a ModelLoadError naming the part and the layer.
 */
import { ModelLoadError, UnsupportedError } from '../../../errors.js';
import type { FoundDecoder, FoundLayer, FoundProjection, FoundShape, ProjectionName, AttentionStyle } from './decoder.js';
import { attributeInt, GraphIndex, type NodeProto } from './graph-index.js';
import { readHead, readProjection, type Weighted } from './read-weights.js';
import { ropeScalingOf } from './rope.js';

export interface FindDecoderOptions {
  /** The model's config.json (heads, key/value heads, head_dim, rope_theta, rms_norm_eps). */
  config: Record<string, unknown>;
  /** External data files by the name the graph refers to (`model.onnx_data`). */
  externalData?: Record<string, Uint8Array>;
  /**
   * Keep the projections an fp16 export stores as MatMul weights at 16 bits (HalfMatrix), for an
   * engine that widens them in its graphs: half the bytes of float32. Default false (every weight
   * float32, widened exactly).
   */
  keepHalf?: boolean;
}

const WEIGHTED = new Set(['MatMul', 'Gemm', 'MatMulNBits']);
const ATTENTION_OPS = new Set(['GroupQueryAttention', 'MultiHeadAttention', 'Attention']);
const HEAD_PASS_THROUGH = new Set(['Cast', 'Identity', 'Reshape', 'Squeeze', 'Unsqueeze', 'Flatten', 'Mul', 'Div', 'Add', 'Sub', 'Tanh', 'Slice', 'Gather']);

export function findDecoder(model: Uint8Array, options: FindDecoderOptions): FoundDecoder {
  const g = new GraphIndex(model, options.externalData, options.keepHalf);
  if (!g.inputs.includes('input_ids')) throw new ModelLoadError('The ONNX graph has no input_ids input; it is not a decoder export.');
  if (!g.outputs.includes('logits')) throw new ModelLoadError('The ONNX graph has no logits output; it is not a decoder export.');
  const { embedding, source: embeddingSource } = findEmbedding(g);
  const vocabSize = embedding.rows;
  const hiddenSize = embedding.cols;

  const headNode = findHead(g);
  const groups = groupByInput(weightedNodes(g, headNode));
  const seen: AttentionSeen = { attention: 'decomposed', heads: { q: 0, kv: 0 } };
  const layers: FoundLayer[] = [];
  for (let at = 0; at < groups.length; at += 4) {
    layers.push(findLayer(g, [groups[at], groups[at + 1], groups[at + 2], groups[at + 3]], layers.length, hiddenSize, options.config, seen));
  }
  if (layers.length === 0) throw new ModelLoadError('Part not found: decoder layers (no MatMul with a constant weight besides the head).');

  const shape = shapeOf(options.config, vocabSize, hiddenSize, layers, seen.heads);
  for (const [i, layer] of layers.entries()) checkDims(shape, layer, i);

  const finalNorm = normScale(g, passBack(g, headNode.input[0]), hiddenSize);
  if (!finalNorm) throw new ModelLoadError(`Part not found: the final RMS norm's [${hiddenSize}] scale before the head.`);
  const head = readHead(g, headNode, embeddingSource, hiddenSize, vocabSize);
  return {
    shape,
    embedding: embedding.data,
    layers,
    finalNorm,
    ...(head ? { lmHead: head.data } : {}),
    ...(embedding.half ? { embeddingHalf: embedding.half } : {}),
    ...(head?.half ? { lmHeadHalf: head.half } : {}),
    attention: seen.attention,
  };
}

/** The embedding: a Gather reading a constant table with input_ids. */
function findEmbedding(g: GraphIndex): { embedding: NonNullable<ReturnType<GraphIndex['matrix']>>; source: string } {
  const embedNode = g.nodes.find((n) => n.opType === 'Gather' && fedBy(g, n.input[1], 'input_ids') && g.constantSource(n.input[0])?.transposed === false);
  if (!embedNode) throw new ModelLoadError('Part not found: the embedding (a Gather reading a constant table with input_ids).');
  const embedding = g.matrix(embedNode.input[0]);
  if (!embedding) throw new ModelLoadError('Part not found: the embedding table is not a 2-D float constant.');
  return { embedding, source: g.constantSource(embedNode.input[0])!.name };
}

/** Every product with a constant weight but the head, with the bias added after it when there is one. */
function weightedNodes(g: GraphIndex, headNode: NodeProto): Weighted[] {
  const weighted: Weighted[] = [];
  for (const node of g.nodes) {
    if (node === headNode || !WEIGHTED.has(node.opType) || !g.isConstant(node.input[1])) continue;
    const bias = biasAdd(g, node);
    weighted.push({ node, input: node.input[0], output: bias?.add.output[0] ?? node.output[0], ...(bias ? { bias: bias.constant } : {}) });
  }
  return weighted;
}

/** How the layers met so far compute attention, and the head counts a fused attention op names. */
interface AttentionSeen {
  attention: AttentionStyle;
  heads: { q: number; kv: number };
}

/** Layer i from its four groups of products (q, k, v; o; gate, up; down), each told apart by where it leads. */
function findLayer(g: GraphIndex, [qkv, o, mlp, down]: Weighted[][], i: number, hiddenSize: number, config: Record<string, unknown>, seen: AttentionSeen): FoundLayer {
  if (qkv.length !== 3) {
    if (qkv.length === 1) throw new UnsupportedError(`Layer ${i}: one projection reads the normed input (a fused qkv_proj?); separate q, k and v projections are supported.`);
    throw new ModelLoadError(`Layer ${i}: part not found: the q, k and v projections (three MatMuls reading one normed input); found ${qkv.length}.`);
  }
  if (o?.length !== 1) throw new ModelLoadError(`Layer ${i}: part not found: the attention output projection (o_proj).`);
  if (mlp?.length !== 2) throw new ModelLoadError(`Layer ${i}: part not found: the MLP's gate and up projections (two MatMuls reading one normed input)${mlp?.length === 1 ? '; a fused gate_up_proj is not supported' : ''}.`);
  if (down?.length !== 1) throw new ModelLoadError(`Layer ${i}: part not found: the MLP's down projection.`);

  const { q, k, v } = attentionRoles(g, qkv, i, seen);
  const [gate, up] = sigmoidReached(g, mlp[0].output) ? [mlp[0], mlp[1]] : sigmoidReached(g, mlp[1].output) ? [mlp[1], mlp[0]] : [];
  if (!gate || !up) throw new ModelLoadError(`Layer ${i}: part not found: the SiLU gate (neither MLP projection goes through a Sigmoid).`);

  const inputNorm = normScale(g, qkv[0].input, hiddenSize);
  if (!inputNorm) throw new ModelLoadError(`Layer ${i}: part not found: the input RMS norm's [${hiddenSize}] scale before q, k, v.`);
  const postNorm = normScale(g, mlp[0].input, hiddenSize);
  if (!postNorm) throw new ModelLoadError(`Layer ${i}: part not found: the post-attention RMS norm's [${hiddenSize}] scale before gate and up.`);
  const read = (w: Weighted) => readProjection(g, w);
  const projections: Record<ProjectionName, FoundProjection> = {
    q_proj: read(q.w),
    k_proj: read(k.w),
    v_proj: read(v.w),
    o_proj: read(o[0]),
    gate_proj: read(gate),
    up_proj: read(up),
    down_proj: read(down[0]),
  };
  const headDim = numberOr(config.head_dim, undefined);
  const qNorm = headScale(g, q.visited, headDim);
  const kNorm = headScale(g, k.visited, headDim);
  return { ...projections, inputNorm, postNorm, ...(qNorm ? { qNorm } : {}), ...(kNorm ? { kNorm } : {}) };
}

/** Which of the three products is the query, the key and the value, by how each reaches attention. */
function attentionRoles(g: GraphIndex, qkv: Weighted[], i: number, seen: AttentionSeen): Record<'q' | 'k' | 'v', { w: Weighted; visited: NodeProto[] }> {
  const roles = new Map<string, { w: Weighted; visited: NodeProto[] }>();
  for (const w of qkv) {
    const found = attentionRole(g, w.output);
    if (!found) throw new ModelLoadError(`Layer ${i}: part not found: attention (the q, k, v projection ${w.node.name || w.node.input[1]} does not reach an attention MatMul or GroupQueryAttention).`);
    if (roles.has(found.role)) throw new ModelLoadError(`Layer ${i}: two projections reach attention as ${found.role}.`);
    roles.set(found.role, { w, visited: found.visited });
    if (found.attention) {
      seen.attention = 'GroupQueryAttention';
      seen.heads.q = attributeInt(found.attention, 'num_heads') ?? seen.heads.q;
      seen.heads.kv = attributeInt(found.attention, 'kv_num_heads') ?? seen.heads.kv;
    }
  }
  const q = roles.get('q');
  const k = roles.get('k');
  const v = roles.get('v');
  if (!q || !k || !v) throw new ModelLoadError(`Layer ${i}: part not found: the ${!q ? 'query' : !k ? 'key' : 'value'} projection.`);
  if (!hasRotary(q.visited)) throw new ModelLoadError(`Layer ${i}: part not found: the rotary embedding on the query's way to attention.`);
  return { q, k, v };
}

/** Whether `tensor` is `source`, or comes from it through casts and reshapes. */
function fedBy(g: GraphIndex, tensor: string, source: string): boolean {
  for (let depth = 0; depth < 4; depth++) {
    if (tensor === source) return true;
    const node = g.producers.get(tensor);
    if (!node || !['Cast', 'Identity', 'Reshape', 'Unsqueeze', 'Squeeze'].includes(node.opType)) return false;
    tensor = node.input[0];
  }
  return false;
}

function findHead(g: GraphIndex): NodeProto {
  let tensor = 'logits';
  for (let depth = 0; depth < 12; depth++) {
    const node = g.producers.get(tensor);
    if (!node) break;
    if (WEIGHTED.has(node.opType)) return node;
    if (!HEAD_PASS_THROUGH.has(node.opType)) break;
    const next = node.input.find((i) => i && !g.isConstant(i));
    if (!next) break;
    tensor = next;
  }
  throw new ModelLoadError('Part not found: the head (the MatMul that produces logits).');
}

/** The tensor a chain of shape-only ops (Slice, Reshape, Cast, ...) ends at, walking back. */
function passBack(g: GraphIndex, tensor: string): string {
  for (let depth = 0; depth < 6; depth++) {
    const node = g.producers.get(tensor);
    if (!node || !['Cast', 'Identity', 'Reshape', 'Slice', 'Squeeze', 'Unsqueeze', 'Gather'].includes(node.opType)) return tensor;
    tensor = node.input[0];
  }
  return tensor;
}

function biasAdd(g: GraphIndex, node: NodeProto): { add: NodeProto; constant: string } | undefined {
  if (node.opType === 'Gemm' && node.input[2]) return undefined;
  const users = g.consumersOf(node.output[0]);
  if (users.length !== 1 || users[0].opType !== 'Add') return undefined;
  const constant = users[0].input.find((i) => i !== node.output[0] && g.isConstant(i));
  if (!constant || g.constantSource(constant)!.dequantize) return undefined;
  return { add: users[0], constant };
}

/** The weighted MatMuls grouped by the activation they read, in graph (topological) order. */
function groupByInput(weighted: Weighted[]): Weighted[][] {
  const groups = new Map<string, Weighted[]>();
  for (const w of weighted) groups.set(w.input, [...(groups.get(w.input) ?? []), w]);
  return [...groups.values()];
}

/**
 * Where a projection's output meets attention, walking forward through everything but other
 * weighted MatMuls: its role, the nodes on the way (where q/k norms and the rotary sit), and the
 * fused attention node when there is one.
 */
function attentionRole(g: GraphIndex, start: string): { role: 'q' | 'k' | 'v'; visited: NodeProto[]; attention?: NodeProto } | undefined {
  const visited: NodeProto[] = [];
  const seen = new Set<string>([start]);
  const queue = [start];
  while (queue.length > 0 && visited.length < 200) {
    const tensor = queue.shift()!;
    for (const node of g.consumersOf(tensor)) {
      const index = node.input.indexOf(tensor);
      if (ATTENTION_OPS.has(node.opType)) {
        const role = (['q', 'k', 'v'] as const)[index];
        if (!role) return undefined;
        if (node.opType === 'GroupQueryAttention' && attributeInt(node, 'rotary_interleaved') === 1) {
          throw new UnsupportedError(`${node.name}: interleaved rotary embeddings are not supported (rotate-half only).`);
        }
        return { role, visited: [...visited, node], attention: node };
      }
      if (WEIGHTED.has(node.opType) && g.isConstant(node.input[1])) continue;
      if (node.opType === 'MatMul') {
        if (index === 0) return { role: 'q', visited };
        return { role: fromSoftmax(g, node.input[0]) ? 'v' : 'k', visited };
      }
      visited.push(node);
      for (const out of node.output) {
        if (out && !seen.has(out)) {
          seen.add(out);
          queue.push(out);
        }
      }
    }
  }
  return undefined;
}

function fromSoftmax(g: GraphIndex, tensor: string): boolean {
  for (let depth = 0; depth < 4; depth++) {
    const node = g.producers.get(tensor);
    if (!node) return false;
    if (node.opType === 'Softmax') return true;
    if (!['Cast', 'Identity', 'Reshape', 'Dropout', 'Where'].includes(node.opType)) return false;
    tensor = node.input[0];
  }
  return false;
}

function hasRotary(visited: NodeProto[]): boolean {
  return visited.some((n) => n.opType === 'Neg' || n.opType === 'RotaryEmbedding' || (n.opType === 'GroupQueryAttention' && attributeInt(n, 'do_rotary') === 1));
}

function sigmoidReached(g: GraphIndex, tensor: string): boolean {
  let frontier = [tensor];
  for (let depth = 0; depth < 3; depth++) {
    const next: string[] = [];
    for (const t of frontier) {
      for (const node of g.consumersOf(t)) {
        if (node.opType === 'Sigmoid') return true;
        if (['Cast', 'Identity'].includes(node.opType)) next.push(node.output[0]);
      }
    }
    frontier = next;
  }
  return false;
}

/** The [size] scale of the RMS norm that produces `tensor`. */
function normScale(g: GraphIndex, tensor: string, size: number): Float32Array | undefined {
  for (let depth = 0; depth < 4; depth++) {
    const node = g.producers.get(tensor);
    if (!node) return undefined;
    if (node.opType === 'Cast' || node.opType === 'Identity') {
      tensor = node.input[0];
      continue;
    }
    if (node.opType === 'LayerNormalization' || node.opType === 'SkipLayerNormalization') throw new UnsupportedError(`${node.name}: LayerNorm (with mean and bias) is not a Llama-family RMS norm.`);
    const candidates =
      node.opType === 'SimplifiedLayerNormalization' ? [node.input[1]] : node.opType === 'SkipSimplifiedLayerNormalization' ? [node.input[2]] : node.opType === 'Mul' ? node.input : [];
    const scale = candidates.find((c) => c && g.isConstant(c) && g.size(g.constantSource(c)!.name) === size);
    return scale ? g.floats(g.constantSource(scale)!.name) : undefined;
  }
  return undefined;
}

/** A per-head norm's [head_dim] scale among the nodes between a projection and attention. */
function headScale(g: GraphIndex, visited: NodeProto[], headDim: number | undefined): Float32Array | undefined {
  for (const node of visited) {
    const candidates = node.opType === 'SimplifiedLayerNormalization' ? [node.input[1]] : node.opType === 'Mul' ? node.input : [];
    for (const c of candidates) {
      if (!c || !g.isConstant(c)) continue;
      const source = g.constantSource(c)!.name;
      const size = g.size(source);
      if (size > 1 && (headDim === undefined || size === headDim)) return g.floats(source);
    }
  }
  return undefined;
}

function numberOr(value: unknown, fallback: number | undefined): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function shapeOf(config: Record<string, unknown>, vocabSize: number, hiddenSize: number, layers: FoundLayer[], heads: { q: number; kv: number }): FoundShape {
  const required = (key: string, found: number | undefined): number => {
    const value = numberOr(config[key], found || undefined);
    if (value === undefined) throw new ModelLoadError(`config.json has no numeric ${key}, and the graph does not say it.`);
    if (found && value !== found) throw new ModelLoadError(`config.json says ${key} ${value}; the graph has ${found}.`);
    return value;
  };
  required('hidden_size', hiddenSize);
  const numHeads = required('num_attention_heads', heads.q);
  const numKvHeads = numberOr(config.num_key_value_heads, heads.kv || numHeads)!;
  if (heads.kv && numKvHeads !== heads.kv) throw new ModelLoadError(`config.json says num_key_value_heads ${numKvHeads}; the graph has ${heads.kv}.`);
  const qOut = layers[0].q_proj.outDim;
  const ropeScaling = ropeScalingOf(config);
  return {
    vocabSize,
    hiddenSize,
    intermediateSize: required('intermediate_size', layers[0].gate_proj.outDim),
    numLayers: required('num_hidden_layers', layers.length),
    numHeads,
    numKvHeads,
    headDim: numberOr(config.head_dim, qOut / numHeads)!,
    ropeTheta: numberOr(config.rope_theta, 10000)!,
    ...(ropeScaling ? { ropeScaling } : {}),
    rmsNormEps: numberOr(config.rms_norm_eps, 1e-6)!,
  };
}

function checkDims(shape: FoundShape, layer: FoundLayer, i: number): void {
  const { hiddenSize: h, intermediateSize: f, numHeads, numKvHeads, headDim: d } = shape;
  const want: Record<ProjectionName, [number, number]> = {
    q_proj: [h, numHeads * d],
    k_proj: [h, numKvHeads * d],
    v_proj: [h, numKvHeads * d],
    o_proj: [numHeads * d, h],
    gate_proj: [h, f],
    up_proj: [h, f],
    down_proj: [f, h],
  };
  for (const [name, [inDim, outDim]] of Object.entries(want) as Array<[ProjectionName, [number, number]]>) {
    const p = layer[name];
    if (p.inDim !== inDim || p.outDim !== outDim) throw new ModelLoadError(`Layer ${i} ${name} is [${p.inDim}, ${p.outDim}]; config.json implies [${inDim}, ${outDim}].`);
  }
}
