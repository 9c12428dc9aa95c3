/**
 * A from-scratch float64 Llama forward pass (transformers' LlamaForCausalLM: RMSNorm, rotary
 * embeddings on rotated halves, grouped-query causal attention, SwiGLU), reading the weights out
 * of a generated model.onnx. The ONNX graph must agree with it: that is what makes the generated
 * model a Llama rather than merely something transformers.js can load.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';

interface LlamaConfig {
  hidden_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  head_dim: number;
  rms_norm_eps: number;
  rope_theta: number;
  tie_word_embeddings: boolean;
  vocab_size: number;
}

export interface ReferenceModel {
  config: LlamaConfig;
  /** Logits [sequence, vocab] for one unpadded sequence starting at position 0. */
  forward(ids: number[]): Float64Array[];
}

export async function loadReference(dir: string): Promise<ReferenceModel> {
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as LlamaConfig;
  const model = onnxProto.onnx.ModelProto.decode(await readFile(join(dir, 'onnx/model.onnx')));
  const weights = new Map<string, Float32Array>();
  for (const t of model.graph!.initializer!) {
    if (t.dataType !== onnxProto.onnx.TensorProto.DataType.FLOAT || !t.rawData?.length) continue;
    const bytes = t.rawData;
    weights.set(t.name!, new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)));
  }
  const w = (name: string) => {
    const value = weights.get(name);
    if (!value) throw new Error(`missing weight ${name}`);
    return value;
  };
  return { config, forward: (ids) => forward(config, w, ids) };
}

function forward(c: LlamaConfig, w: (name: string) => Float32Array, ids: number[]): Float64Array[] {
  const H = c.hidden_size;
  const D = c.head_dim;
  const nH = c.num_attention_heads;
  const nKv = c.num_key_value_heads;
  const embed = w('model.embed_tokens.weight');
  let x: Float64Array[] = ids.map((id) => Float64Array.from(embed.subarray(id * H, (id + 1) * H)));

  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const h = x.map((row) => rmsNorm(row, w(`${p}.input_layernorm.weight`), c.rms_norm_eps));
    const q = h.map((row, pos) => rope(matVec(row, w(`${p}.self_attn.q_proj.weight`), nH * D), pos, nH, D, c.rope_theta));
    const k = h.map((row, pos) => rope(matVec(row, w(`${p}.self_attn.k_proj.weight`), nKv * D), pos, nKv, D, c.rope_theta));
    const v = h.map((row) => matVec(row, w(`${p}.self_attn.v_proj.weight`), nKv * D));
    const context = q.map((qi, i) => {
      const out = new Float64Array(nH * D);
      for (let head = 0; head < nH; head++) {
        const kvHead = Math.floor(head / (nH / nKv));
        const scores = Array.from({ length: i + 1 }, (_, j) => {
          let dot = 0;
          for (let d = 0; d < D; d++) dot += qi[head * D + d] * k[j][kvHead * D + d];
          return dot / Math.sqrt(D);
        });
        const max = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - max));
        const sum = e.reduce((a, b) => a + b, 0);
        for (let j = 0; j <= i; j++) for (let d = 0; d < D; d++) out[head * D + d] += (e[j] / sum) * v[j][kvHead * D + d];
      }
      return out;
    });
    x = x.map((row, i) => add(row, matVec(context[i], w(`${p}.self_attn.o_proj.weight`), H)));
    const h2 = x.map((row) => rmsNorm(row, w(`${p}.post_attention_layernorm.weight`), c.rms_norm_eps));
    x = x.map((row, i) => {
      const gate = matVec(h2[i], w(`${p}.mlp.gate_proj.weight`), -1);
      const up = matVec(h2[i], w(`${p}.mlp.up_proj.weight`), gate.length);
      const act = gate.map((g, j) => (g / (1 + Math.exp(-g))) * up[j]);
      return add(row, matVec(act, w(`${p}.mlp.down_proj.weight`), H));
    });
  }
  const final = x.map((row) => rmsNorm(row, w('model.norm.weight'), c.rms_norm_eps));
  const V = c.vocab_size;
  return final.map((row) => {
    const logits = new Float64Array(V);
    if (c.tie_word_embeddings) {
      for (let t = 0; t < V; t++) for (let j = 0; j < H; j++) logits[t] += row[j] * embed[t * H + j];
    } else {
      logits.set(matVec(row, w('lm_head.weight'), V));
    }
    return logits;
  });
}

/** row [in] times W stored [in, out]; out = -1 infers it from W's size. */
function matVec(row: Float64Array, weight: Float32Array, out: number): Float64Array {
  const n = out < 0 ? weight.length / row.length : out;
  const result = new Float64Array(n);
  for (let i = 0; i < row.length; i++) {
    const xi = row[i];
    for (let j = 0; j < n; j++) result[j] += xi * weight[i * n + j];
  }
  return result;
}

function rmsNorm(row: Float64Array, weight: Float32Array, eps: number): Float64Array {
  const meanSquare = row.reduce((s, v) => s + v * v, 0) / row.length;
  const scale = 1 / Math.sqrt(meanSquare + eps);
  return row.map((v, i) => v * scale * weight[i]);
}

/** Rotary embedding, transformers' convention: rotate_half pairs dimension d with d + D/2. */
function rope(row: Float64Array, position: number, heads: number, D: number, theta: number): Float64Array {
  const out = new Float64Array(row.length);
  for (let h = 0; h < heads; h++) {
    for (let d = 0; d < D / 2; d++) {
      const angle = position / theta ** ((2 * d) / D);
      const [a, b] = [row[h * D + d], row[h * D + d + D / 2]];
      out[h * D + d] = a * Math.cos(angle) - b * Math.sin(angle);
      out[h * D + d + D / 2] = b * Math.cos(angle) + a * Math.sin(angle);
    }
  }
  return out;
}

function add(a: Float64Array, b: Float64Array): Float64Array {
  return a.map((v, i) => v + b[i]);
}
