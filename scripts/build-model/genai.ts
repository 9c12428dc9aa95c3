/**
 * The Llama decoder as onnxruntime-genai's model builder writes it, with com.microsoft ops:
 * GroupQueryAttention (rotary embeddings inside, `do_rotary`), whose `seqlens_k` and
 * `total_sequence_length` come from `attention_mask`; SkipSimplifiedLayerNormalization for the
 * residual adds and RMS norms; no `position_ids` input. Same I/O names as the Optimum graph
 * (`past_key_values.*` -> `present.*`), so transformers.js loads it as it loads genai exports.
 */
import { ropeInvFreq } from '../../lib/policy/onnx/structure/rope.js';
import { matMulNBits, rmsNorm } from './llama.js';
import { DataType, GraphBuilder } from './onnx-graph.js';
import type { ModelSpec } from './spec.js';
import type { Weights } from './weights.js';

export function buildGenaiGraph(spec: ModelSpec, weights: Weights, vocabSize: number): Uint8Array {
  const g = new GraphBuilder({ params: spec.weights === 'fp16' ? 'float16' : 'float32' });
  const { hiddenSize: hidden, numHeads, numKvHeads, headDim, numLayers, rmsNormEps: epsilon } = spec;
  // The real builder's names: attention is `attn`, each weight is named after its node
  // (`model.layers.0.attn.q_proj.MatMul.weight`), the final norm is the last layer's.
  const exporter = spec.names === 'exporter';
  const attn = exporter ? 'attn' : 'self_attn';
  const inputIds = g.input('input_ids', DataType.INT64, ['batch_size', 'sequence_length']);
  const attentionMask = g.input('attention_mask', DataType.INT64, ['batch_size', 'total_sequence_length']);
  const kvShape = ['batch_size', numKvHeads, 'past_sequence_length', headDim];
  for (let i = 0; i < numLayers; i++) {
    g.input(`past_key_values.${i}.key`, DataType.FLOAT, kvShape);
    g.input(`past_key_values.${i}.value`, DataType.FLOAT, kvShape);
  }
  g.output('logits', DataType.FLOAT, ['batch_size', 'sequence_length', vocabSize]);
  for (let i = 0; i < numLayers; i++) {
    g.output(`present.${i}.key`, DataType.FLOAT, ['batch_size', numKvHeads, 'total_sequence_length', headDim]);
    g.output(`present.${i}.value`, DataType.FLOAT, ['batch_size', numKvHeads, 'total_sequence_length', headDim]);
  }

  // genai's attn_mask_reformat: seqlens_k = sum(mask) - 1 per row, total = the mask's width (int32).
  const seqlensK = g.node('Cast', [g.node('Sub', [g.node('ReduceSum', [attentionMask, g.int64s([1])], { keepdims: 0 }), g.int64s([1], [])])], { to: DataType.INT32 });
  const total = g.node('Cast', [g.node('Squeeze', [g.node('Slice', [g.node('Shape', [attentionMask]), g.int64s([1]), g.int64s([2])]), g.int64s([0])])], { to: DataType.INT32 });

  const half = headDim / 2;
  const cos = new Float32Array(spec.maxPositionEmbeddings * half);
  const sin = new Float32Array(spec.maxPositionEmbeddings * half);
  const invFreq = ropeInvFreq(spec);
  for (let p = 0; p < spec.maxPositionEmbeddings; p++) {
    for (let i = 0; i < half; i++) {
      const angle = p * invFreq[i];
      cos[p * half + i] = Math.cos(angle);
      sin[p * half + i] = Math.sin(angle);
    }
  }
  const cosCache = g.weight('cos_cache', cos, [spec.maxPositionEmbeddings, half]);
  const sinCache = g.weight('sin_cache', sin, [spec.maxPositionEmbeddings, half]);

  const embed = g.param('model.embed_tokens.weight', weights.embedTokens, [vocabSize, hidden]);
  let residual = g.node('Gather', [embed, inputIds], { axis: 0 });
  let normed = rmsNorm(g, residual, g.param('model.layers.0.input_layernorm.weight', weights.layers[0].inputNorm, [hidden]), epsilon);
  /** SkipSimplifiedLayerNormalization: norm(x + skip) and the sum x + skip, the next residual. */
  const skipNorm = (x: string, skip: string, weight: string): [string, string] => {
    const id = `skip_norm_${weight}`;
    const [out, , , sum] = g.nodeN('SkipSimplifiedLayerNormalization', [x, skip, weight], 4, { epsilon: { float: epsilon } }, [`${id}_out`, '', '', `${id}_sum`], 'com.microsoft');
    return [out, sum];
  };

  weights.layers.forEach((layer, i) => {
    const prefix = `model.layers.${i}`;
    const proj = (name: string, w: Float32Array, outDim: number, input: string, bias?: Float32Array) =>
      g.inScope(exporter ? `/model/layers.${i}/${name.replace('.', '/')}` : undefined, () => {
        const weightName = exporter ? `${prefix}.${name}.MatMul.weight` : `${prefix}.${name}.weight`;
        const y =
          spec.weights === 'q4'
            ? matMulNBits(g, weightName, w, outDim, input)
            : g.node('MatMul', [input, g.param(weightName, w, [w.length / outDim, outDim])]);
        return bias ? g.node('Add', [y, g.param(exporter ? `${prefix}.${name}.Add.bias` : `${prefix}.${name}.bias`, bias, [outDim])]) : y;
      });
    // Qwen3's per-head norms: SimplifiedLayerNormalization over [B, S, heads, D], back to [B, S, heads * D].
    const headNorm = (t: string, weight: Float32Array | undefined, name: string, count: number) => {
      if (!weight) return t;
      const perHead = g.node('Reshape', [t, g.int64s([0, 0, count, headDim])]);
      const scale = g.param(exporter ? `${prefix}.${attn}.${name}.layernorm.weight` : `${prefix}.${attn}.${name}.weight`, weight, [headDim]);
      const normed = g.node('SimplifiedLayerNormalization', [perHead, scale], { axis: -1, epsilon: { float: epsilon } });
      return g.node('Reshape', [normed, g.int64s([0, 0, count * headDim])]);
    };
    const q = headNorm(proj(`${attn}.q_proj`, layer.q, numHeads * headDim, normed, layer.qBias), layer.qNorm, 'q_norm', numHeads);
    const k = headNorm(proj(`${attn}.k_proj`, layer.k, numKvHeads * headDim, normed, layer.kBias), layer.kNorm, 'k_norm', numKvHeads);
    const v = proj(`${attn}.v_proj`, layer.v, numKvHeads * headDim, normed, layer.vBias);
    const [attention] = g.nodeN(
      'GroupQueryAttention',
      [q, k, v, `past_key_values.${i}.key`, `past_key_values.${i}.value`, seqlensK, total, cosCache, sinCache],
      3,
      { num_heads: numHeads, kv_num_heads: numKvHeads, do_rotary: 1, rotary_interleaved: 0, scale: { float: 1 / Math.sqrt(headDim) } },
      [`${prefix}.attn_out`, `present.${i}.key`, `present.${i}.value`],
      'com.microsoft',
    );
    const out = proj(`${attn}.o_proj`, layer.o, hidden, attention);
    let h2: string;
    [h2, residual] = skipNorm(out, residual, g.param(`${prefix}.post_attention_layernorm.weight`, layer.postNorm, [hidden]));
    const gate = proj('mlp.gate_proj', layer.gate, spec.intermediateSize, h2);
    const up = proj('mlp.up_proj', layer.up, spec.intermediateSize, h2);
    const down = proj('mlp.down_proj', layer.down, hidden, g.node('Mul', [g.node('Mul', [gate, g.node('Sigmoid', [gate])]), up]));
    const finalNorm = exporter ? `model.layers.${numLayers}.final_norm_layernorm.weight` : 'model.norm.weight';
    const nextNorm = i + 1 < numLayers ? g.param(`model.layers.${i + 1}.input_layernorm.weight`, weights.layers[i + 1].inputNorm, [hidden]) : g.param(finalNorm, weights.finalNorm, [hidden]);
    [normed, residual] = skipNorm(down, residual, nextNorm);
  });

  const head = weights.lmHead ? g.param(exporter ? 'lm_head.MatMul.weight' : 'lm_head.weight', weights.lmHead, [hidden, vocabSize]) : g.node('Transpose', [embed], { perm: [1, 0] });
  g.node('MatMul', [normed, head], {}, 'logits');
  return g.encode('genai', `Llama decoder in onnxruntime-genai's style (${numLayers} layers, GroupQueryAttention) generated by webgrpo`);
}
