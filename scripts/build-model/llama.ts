/**
 * The Llama decoder as an ONNX graph with the I/O contract of Hugging Face Optimum's
 * `text-generation-with-past` export, which transformers.js drives:
 *
 *   input_ids, attention_mask, position_ids          int64 [batch_size, *]
 *   past_key_values.{i}.key|value                    float [batch_size, kv_heads, past_sequence_length, head_dim]
 *   -> logits                                        float [batch_size, sequence_length, vocab]
 *   -> present.{i}.key|value                         float [batch_size, kv_heads, total_sequence_length, head_dim]
 *
 * The math follows `transformers`' LlamaForCausalLM: RMSNorm, rotary embeddings on rotated halves,
 * grouped-query attention with a causal and padding mask, SwiGLU MLP. Only plain ONNX ops that
 * onnxruntime's CPU, WASM and WebGPU execution providers implement are used (no contrib ops).
 *
 * With float16 activations (the hub's fp16 and q4f16 exports: `halfActivations`, or weights
 * 'q4f16') every parameter, activation, the cache and the logits are float16; positions, rotary
 * angles and the mask are computed in float32 and cast, and the mask uses float16's most negative
 * finite value (-65504), as torch's fp16 export does, so a fully masked row stays finite.
 */
import { ropeInvFreq } from '../../lib/policy/onnx/structure/rope.js';
import { DataType, GraphBuilder, type ExternalPiece } from './onnx-graph.js';
import type { ModelSpec } from './spec.js';
import type { Weights } from './weights.js';

const FLOAT_MAX = 3.4028234663852886e38;
const HALF_MAX = 65504;

export function buildLlamaGraph(spec: ModelSpec, weights: Weights, vocabSize: number): Uint8Array;
export function buildLlamaGraph(spec: ModelSpec, weights: Weights, vocabSize: number, externalData: string): { model: Uint8Array; data: ExternalPiece[]; dataSize: number };
export function buildLlamaGraph(spec: ModelSpec, weights: Weights, vocabSize: number, externalData?: string): Uint8Array | { model: Uint8Array; data: ExternalPiece[]; dataSize: number } {
  const half = halfActivations(spec);
  const g = new GraphBuilder({ params: spec.weights === 'fp16' || spec.weights === 'q4f16' ? 'float16' : 'float32', activations: half ? 'float16' : 'float32' });
  const { hiddenSize: hidden, numHeads, numKvHeads, headDim, numLayers } = spec;
  const exporter = spec.names === 'exporter';

  const inputIds = g.input('input_ids', DataType.INT64, ['batch_size', 'sequence_length']);
  const attentionMask = g.input('attention_mask', DataType.INT64, ['batch_size', 'total_sequence_length']);
  const positionIds = spec.positionIdsInput === false ? undefined : g.input('position_ids', DataType.INT64, ['batch_size', 'sequence_length']);
  const cacheType = spec.halfCache || half ? DataType.FLOAT16 : DataType.FLOAT;
  // halfCache: a float16 cache around float32 arithmetic (with float16 activations the cache is simply the activations' type).
  const castCache = spec.halfCache === true && !half;
  const logitsToKeep = spec.logitsToKeepInput ? g.input('num_logits_to_keep', DataType.INT64, []) : undefined;
  const kvShape = ['batch_size', numKvHeads, 'past_sequence_length', headDim];
  for (let i = 0; i < numLayers; i++) {
    g.input(`past_key_values.${i}.key`, cacheType, kvShape);
    g.input(`past_key_values.${i}.value`, cacheType, kvShape);
  }
  g.output('logits', cacheType, ['batch_size', logitsToKeep ? 'logits_length' : 'sequence_length', vocabSize]);
  const presentShape = ['batch_size', numKvHeads, 'total_sequence_length', headDim];
  for (let i = 0; i < numLayers; i++) {
    g.output(`present.${i}.key`, cacheType, presentShape);
    g.output(`present.${i}.value`, cacheType, presentShape);
  }

  const embed = g.param('model.embed_tokens.weight', weights.embedTokens, [vocabSize, hidden]);
  let x = g.node('Gather', [embed, inputIds], { axis: 0 });

  // Rotary tables from the position ids: angle = position * inv_freq, halves repeated.
  const invFreq = ropeInvFreq(spec);
  const positions = g.node('Unsqueeze', [positionIds ? g.node('Cast', [positionIds], { to: DataType.FLOAT }) : maskPositions(g, inputIds, attentionMask), g.int64s([2])]);
  const freqs = g.node('Mul', [positions, g.weight('rotary.inv_freq', invFreq, [headDim / 2])]);
  const angles = g.node('Concat', [freqs, freqs], { axis: 2 });
  const cos = g.toAct(g.node('Unsqueeze', [g.node('Cos', [angles]), g.int64s([1])])); // [B, 1, S, D]
  const sin = g.toAct(g.node('Unsqueeze', [g.node('Sin', [angles]), g.int64s([1])]));

  const maskValue = half ? HALF_MAX : FLOAT_MAX;
  const bias = g.toAct(spec.causalMask === 'input-ids' ? inputIdsBias(g, inputIds, attentionMask, maskValue) : generalBias(g, inputIds, attentionMask, maskValue));

  const scale = g.scalar(1 / Math.sqrt(headDim));
  const halfDim = headDim / 2;
  const rotate = (t: string): string => {
    // rotate_half: concat(-x2, x1) over the last axis, then x * cos + rotate_half(x) * sin.
    const [x1, x2] = g.nodeN('Split', [t, g.int64s([halfDim, halfDim])], 2, { axis: -1 });
    const rotated = g.node('Concat', [g.node('Neg', [x2]), x1], { axis: -1 });
    return g.node('Add', [g.node('Mul', [t, cos]), g.node('Mul', [rotated, sin])]);
  };
  const heads = (t: string, count: number): string =>
    g.node('Transpose', [g.node('Reshape', [t, g.int64s([0, 0, count, headDim])])], { perm: [0, 2, 1, 3] });
  // Grouped-query attention without copying the cache: the query heads that share a key/value head
  // are consecutive, so [B, heads, S, D] reshapes to [B, kv_heads, groups * S, D] and attends to
  // that head's keys directly; the bias repeats once per group.
  const groups = numHeads / numKvHeads;
  const groupBias = groups === 1 ? bias : g.node('Tile', [bias, g.int64s([1, 1, groups, 1])]);

  weights.layers.forEach((layer, i) => {
    const prefix = `model.layers.${i}`;
    const h = rmsNorm(g, x, g.param(`${prefix}.input_layernorm.weight`, layer.inputNorm, [hidden]), spec.rmsNormEps);
    // torch.onnx folds each Linear's transposed weight into a fresh anonymous initializer and names
    // the node after the module; a bias keeps its parameter's name.
    const proj = (name: string, w: Float32Array, outDim: number, input: string, bias?: Float32Array) =>
      g.inScope(exporter ? `/model/layers.${i}/${name.replace('.', '/')}` : undefined, () => {
        const weightName = exporter ? g.anonymous('MatMul') : `${prefix}.${name}.weight`;
        const y =
          spec.weights === 'q4' || spec.weights === 'q4f16'
            ? matMulNBits(g, weightName, w, outDim, input)
            : g.node('MatMul', [input, g.param(weightName, w, [w.length / outDim, outDim])]);
        return bias ? g.node('Add', [g.param(`${prefix}.${name}.bias`, bias, [outDim]), y]) : y;
      });
    const headNorm = (t: string, weight: Float32Array | undefined, name: string) =>
      weight ? rmsNorm(g, t, g.param(`${prefix}.self_attn.${name}.weight`, weight, [headDim]), spec.rmsNormEps) : t;
    const q = rotate(headNorm(heads(proj('self_attn.q_proj', layer.q, numHeads * headDim, h, layer.qBias), numHeads), layer.qNorm, 'q_norm'));
    const k = rotate(headNorm(heads(proj('self_attn.k_proj', layer.k, numKvHeads * headDim, h, layer.kBias), numKvHeads), layer.kNorm, 'k_norm'));
    const v = heads(proj('self_attn.v_proj', layer.v, numKvHeads * headDim, h, layer.vBias), numKvHeads);
    const [keys, values] = (['key', 'value'] as const).map((kind, j) => {
      const past = `past_key_values.${i}.${kind}`;
      const present = `present.${i}.${kind}`;
      const fresh = j === 0 ? k : v;
      if (!castCache) return g.node('Concat', [past, fresh], { axis: 2 }, present);
      // Stored in float16; attention reads the stored (rounded) values, as every pass will later.
      g.node('Cast', [g.node('Concat', [g.node('Cast', [past], { to: DataType.FLOAT }), fresh], { axis: 2 })], { to: DataType.FLOAT16 }, present);
      return g.node('Cast', [present], { to: DataType.FLOAT });
    });

    const grouped = groups === 1 ? q : g.node('Reshape', [q, g.int64s([0, numKvHeads, -1, headDim])]);
    const scores = g.node('Mul', [g.node('MatMul', [grouped, g.node('Transpose', [keys], { perm: [0, 1, 3, 2] })]), scale]);
    const probs = g.node('Softmax', [g.node('Add', [scores, groupBias])], { axis: -1 });
    const attended = g.node('MatMul', [probs, values]);
    const perHead = groups === 1 ? attended : g.node('Reshape', [attended, g.int64s([0, numHeads, -1, headDim])]);
    const context = g.node('Transpose', [perHead], { perm: [0, 2, 1, 3] });
    const merged = g.node('Reshape', [context, g.int64s([0, 0, numHeads * headDim])]);
    x = g.node('Add', [x, proj('self_attn.o_proj', layer.o, hidden, merged)]);

    const h2 = rmsNorm(g, x, g.param(`${prefix}.post_attention_layernorm.weight`, layer.postNorm, [hidden]), spec.rmsNormEps);
    const gate = proj('mlp.gate_proj', layer.gate, spec.intermediateSize, h2);
    const up = proj('mlp.up_proj', layer.up, spec.intermediateSize, h2);
    const act = g.node('Mul', [g.node('Mul', [gate, g.node('Sigmoid', [gate])]), up]); // SiLU(gate) * up
    x = g.node('Add', [x, proj('mlp.down_proj', layer.down, hidden, act)]);
  });

  let final = rmsNorm(g, x, g.param('model.norm.weight', weights.finalNorm, [hidden]), spec.rmsNormEps);
  if (logitsToKeep) {
    // The last k positions; k = 0 gives start -0 = 0, every position.
    const start = g.node('Neg', [g.node('Unsqueeze', [logitsToKeep, g.int64s([0])])]);
    final = g.node('Slice', [final, start, g.int64s([Number.MAX_SAFE_INTEGER]), g.int64s([1])]);
  }
  // Tied: the head reads the embedding matrix transposed (constant-folded by the runtime), so
  // the file stores it once.
  const head = weights.lmHead
    ? g.param(exporter ? g.anonymous('MatMul') : 'lm_head.weight', weights.lmHead, [hidden, vocabSize])
    : g.node('Transpose', [embed], { perm: [1, 0] });
  if (castCache) g.node('Cast', [g.node('MatMul', [final, head])], { to: DataType.FLOAT16 }, 'logits');
  else g.node('MatMul', [final, head], {}, 'logits');

  const doc = `Llama decoder (${numLayers} layers, ${numHeads} heads, ${numKvHeads} kv heads) generated by webgrpo`;
  return externalData ? g.encode('llama', doc, externalData) : g.encode('llama', doc);
}

/** Whether the graph computes in float16 (q4f16 always; fp16 when the spec asks, as the hub's exports do). */
export function halfActivations(spec: ModelSpec): boolean {
  return spec.weights === 'q4f16' || (spec.weights === 'fp16' && spec.halfActivations === true);
}

/**
 * Additive attention bias [B, 1, S, T]: 0 where a query may attend a key, -FLT_MAX elsewhere.
 * Key j is visible to query i (absolute index past + i) when j <= past + i and mask[j] == 1.
 * The indices come from a cumulative sum over ones made from the mask (ConstantOfShape has no
 * WebGPU kernel).
 */
function generalBias(g: GraphBuilder, inputIds: string, attentionMask: string, maskValue: number): string {
  const mask = g.node('Cast', [attentionMask], { to: DataType.FLOAT });
  const ones = g.node('Add', [g.node('Mul', [mask, g.float(0)]), g.float(1)]);
  const keyIndex = g.node('Sub', [g.node('CumSum', [ones, g.int64s([1], [])]), g.float(1)]); // [B, T]
  const queryLength = g.node('Slice', [g.node('Shape', [inputIds]), g.int64s([1]), g.int64s([2])]);
  const queryIndex = g.node('Slice', [keyIndex, g.node('Neg', [queryLength]), g.int64s([Number.MAX_SAFE_INTEGER]), g.int64s([1])]); // [B, S]
  const causal = g.node('LessOrEqual', [g.node('Unsqueeze', [keyIndex, g.int64s([1])]), g.node('Unsqueeze', [queryIndex, g.int64s([2])])]);
  const visible = g.node('Mul', [g.node('Cast', [causal], { to: DataType.FLOAT }), g.node('Unsqueeze', [mask, g.int64s([1])])]);
  return g.node('Unsqueeze', [g.node('Mul', [g.node('Sub', [visible, g.float(1)]), g.float(maskValue)]), g.int64s([1])]);
}

/**
 * The bias as onnxruntime-genai's exports make it: a square causal triangle over the new tokens
 * ([S, S], from `input_ids`), expanded to [B, 1, S, T] and combined with the padding mask. The
 * Expand is valid only when S = T (prefill from an empty cache) or S = 1 (one token on a cache).
 */
function inputIdsBias(g: GraphBuilder, inputIds: string, attentionMask: string, maskValue: number): string {
  const ids = g.node('Cast', [inputIds], { to: DataType.FLOAT });
  const ones = g.node('Add', [g.node('Mul', [ids, g.float(0)]), g.float(1)]); // [B, S]
  const index = g.node('CumSum', [ones, g.int64s([1], [])]); // [B, S]
  const causal = g.node('LessOrEqual', [g.node('Unsqueeze', [index, g.int64s([1])]), g.node('Unsqueeze', [index, g.int64s([2])])]); // [B, S, S]
  const square = g.node('Unsqueeze', [g.node('Cast', [causal], { to: DataType.FLOAT }), g.int64s([1])]); // [B, 1, S, S]
  const idsShape = g.node('Shape', [inputIds]);
  const target = g.node('Concat', [
    g.node('Slice', [idsShape, g.int64s([0]), g.int64s([1])]),
    g.int64s([1]),
    g.node('Slice', [idsShape, g.int64s([1]), g.int64s([2])]),
    g.node('Slice', [g.node('Shape', [attentionMask]), g.int64s([1]), g.int64s([2])]),
  ], { axis: 0 });
  const expanded = g.node('Expand', [square, target], {}, 'attn_mask_reformat/input_ids_subgraph/Expand');
  const padding = g.node('Unsqueeze', [g.node('Cast', [attentionMask], { to: DataType.FLOAT }), g.int64s([1, 2])]); // [B, 1, 1, T]
  const visible = g.node('Mul', [expanded, padding]);
  return g.node('Mul', [g.node('Sub', [visible, g.float(1)]), g.float(maskValue)]);
}

/** Positions from the attention mask when the graph takes no position_ids: cumsum(mask) - 1 over the new tokens. */
function maskPositions(g: GraphBuilder, inputIds: string, attentionMask: string): string {
  const index = g.node('Sub', [g.node('CumSum', [g.node('Cast', [attentionMask], { to: DataType.FLOAT }), g.int64s([1], [])]), g.float(1)]);
  const queryLength = g.node('Slice', [g.node('Shape', [inputIds]), g.int64s([1]), g.int64s([2])]);
  const last = g.node('Slice', [index, g.node('Neg', [queryLength]), g.int64s([Number.MAX_SAFE_INTEGER]), g.int64s([1])]);
  return g.node('Max', [last, g.float(0)]); // padding positions (-1) clamp to 0, as transformers does
}

const Q4_BLOCK = 32;

/**
 * x @ w through com.microsoft MatMulNBits: w ([in, out]) quantized per output column in blocks
 * of 32 inputs, q = round(w / scale) + 8 in 0..15 with scale = max|w| / 7, two per byte, low
 * nibble first; no zero points (8 is MatMulNBits' default). The scales are in the activations'
 * type (float16 in a q4f16 export, where MatMulNBits reads and writes float16).
 */
export function matMulNBits(g: GraphBuilder, name: string, w: Float32Array, outDim: number, input: string): string {
  const inDim = w.length / outDim;
  if (inDim % Q4_BLOCK !== 0) throw new RangeError(`${name}: input size ${inDim} is not a multiple of ${Q4_BLOCK}`);
  const blocks = inDim / Q4_BLOCK;
  const packed = new Uint8Array(outDim * blocks * (Q4_BLOCK / 2));
  const scales = new Float32Array(outDim * blocks);
  for (let n = 0; n < outDim; n++) {
    for (let b = 0; b < blocks; b++) {
      let max = 0;
      for (let j = 0; j < Q4_BLOCK; j++) max = Math.max(max, Math.abs(w[(b * Q4_BLOCK + j) * outDim + n]));
      const scale = max / 7 || 1;
      scales[n * blocks + b] = scale;
      for (let j = 0; j < Q4_BLOCK; j++) {
        const q = Math.min(15, Math.max(0, Math.round(w[(b * Q4_BLOCK + j) * outDim + n] / scale) + 8));
        packed[(n * blocks + b) * (Q4_BLOCK / 2) + (j >> 1)] |= j % 2 === 0 ? q : q << 4;
      }
    }
  }
  // onnxruntime's quantizer names them after the float weight (`onnx::MatMul_12_Q4`, `..._scales`).
  const anonymous = name.startsWith('onnx::');
  const bits = g.tensor(anonymous ? `${name}_Q4` : `${name}.q4`, DataType.UINT8, [outDim, blocks, Q4_BLOCK / 2], packed);
  const scaleName = anonymous ? `${name}_scales` : `${name}.scales`;
  const scale = g.halfActivations ? g.half(scaleName, scales, [outDim * blocks]) : g.weight(scaleName, scales, [outDim * blocks]);
  return g.contrib('MatMulNBits', [input, bits, scale], { K: inDim, N: outDim, bits: 4, block_size: Q4_BLOCK });
}

/** LlamaRMSNorm: x / sqrt(mean(x^2) + eps) * weight. */
export function rmsNorm(g: GraphBuilder, x: string, weight: string, eps: number): string {
  const meanSquare = g.node('ReduceMean', [g.node('Mul', [x, x])], { axes: [-1], keepdims: 1 });
  const normed = g.node('Div', [x, g.node('Sqrt', [g.node('Add', [meanSquare, g.scalar(eps)])])]);
  return g.node('Mul', [normed, weight]);
}
