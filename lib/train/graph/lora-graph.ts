/**
 * The training graphs of a Llama-family decoder (Llama, Qwen2 with q/k/v biases, Qwen3 with q/k
 * norms, tied or untied heads), written with the ops of decoder-ops.ts:
 *
 *   x0 = E[ids]                              h = RMSNorm(x) g           (per layer)
 *   q, k, v = h W (+ b) + s (h A^T) B^T      q, k = RoPE(qNorm?(q)), RoPE(kNorm?(k))
 *   ctx = softmax(q k^T / sqrt(D) + causal) v          x1 = x + ctx Wo (+ LoRA)
 *   x2 = x1 + (silu(h2 Wg) * h2 Wu) Wd, h2 = RMSNorm(x1)
 *   z = RMSNorm(x_L[rows]) head;  logp = log softmax(z / T)[target];  H = -sum p log p
 *
 * This file holds the names every training graph shares and the whole-decoder graphs of
 * full-parameter training (pretraining): every weight a forward input (named as decoderParameters
 * lists them) and the backward's outputs d loss / d every weight (`grad.<name>`):
 *
 *   projection  dW = x^T dy, db = sum_rows dy      RMSNorm  dg = sum_rows dy x inv
 *   head        tied: dE += dz^T (hf / T), untied: dHead = (hf / T)^T dz
 *   embedding   dE[ids[i]] += dx0[i]
 *
 * LoRA trains through per-layer graphs instead (layer-graphs.ts), so its memory is one layer's.
 * Positions (the rotary tables) and the attention bias are inputs, so a row can hold a prompt and
 * several completions that each see the prompt and themselves. The head runs only at the rows
 * that predict a scored token (`score_rows`).
 */
import type { DecoderWeights, LoraModule } from '../../weights/decoder.js';
import { LORA_MODULES } from '../../weights/decoder.js';
import { UnsupportedError } from '../../errors.js';
import { loraInputName } from '../../policy/onnx/structure/lora-inputs.js';
import { TrainingGraphBuilder, type Precision, type TrainingModels } from './builder.js';
import { decoderOps, floatProduct, type LayerOps, type LayerSaved, type ProjectionOps } from './decoder-ops.js';

export interface LoraGraphConfig {
  r: number;
  /** s in y = x W + s x A^T B^T. */
  scale: number;
  targetModules: readonly LoraModule[];
}

/** The graph inputs and outputs, by name. */
export const GRAPH_IO = {
  inputIds: 'input_ids',
  cos: 'rope_cos',
  sin: 'rope_sin',
  bias: 'attn_bias',
  rows: 'score_rows',
  targets: 'targets',
  invTemperature: 'inv_temperature',
  logps: 'logps',
  entropies: 'entropies',
  dlogps: 'dlogps',
  dentropies: 'dentropies',
} as const;

/** The same names the sampler's graph takes them by (addLoraInputs), so one set of arrays feeds both. */
export const loraInput = loraInputName;

/** A decoder weight as a full-parameter graph takes it: its input name and dims. */
export interface DecoderParameter {
  name: string;
  tensor: Float32Array;
  dims: number[];
}

export const weightGradOutput = (name: string) => `grad.${name}`;

/** Every weight of the decoder with its graph input name, in decoderTensors' order. */
export function decoderParameters(weights: DecoderWeights): DecoderParameter[] {
  const { hiddenSize: H, vocabSize: V, headDim: D } = weights.shape;
  const out: DecoderParameter[] = [{ name: 'embedding', tensor: weights.embedding, dims: [V, H] }];
  weights.layers.forEach((layer, l) => {
    out.push({ name: `norm.${l}.input`, tensor: layer.inputNorm, dims: [H] }, { name: `norm.${l}.post`, tensor: layer.postNorm, dims: [H] });
    if (layer.qNorm) out.push({ name: `norm.${l}.q`, tensor: layer.qNorm, dims: [D] });
    if (layer.kNorm) out.push({ name: `norm.${l}.k`, tensor: layer.kNorm, dims: [D] });
    for (const m of LORA_MODULES) {
      const { weight, bias, inDim, outDim } = layer[m];
      if (!(weight instanceof Float32Array)) {
        throw new UnsupportedError(`Layer ${l} ${m} is ${weight.kind === 'q4' ? '4-bit' : 'kept at 16 bits'}; full-parameter training needs float32 weights (fp32 or fp16 exports, read widened: findDecoder's default).`);
      }
      out.push({ name: `w.${l}.${m}`, tensor: weight, dims: [inDim, outDim] });
      if (bias) out.push({ name: `b.${l}.${m}`, tensor: bias, dims: [outDim] });
    }
  });
  out.push({ name: 'norm.final', tensor: weights.finalNorm, dims: [H] });
  if (weights.lmHead) out.push({ name: 'lm_head', tensor: weights.lmHead, dims: [H, V] });
  return out;
}

/** How many weights full-parameter training updates (every tensor decoderParameters names). */
export function decoderParameterCount(weights: DecoderWeights): number {
  return decoderParameters(weights).reduce((n, p) => n + p.tensor.length, 0);
}

/** The whole decoder's forward and backward for full-parameter training. */
export function buildDecoderGraphs(weights: DecoderWeights, precision: Precision = 'float32'): TrainingModels {
  decoderParameters(weights); // refuses 4-bit projections
  const g = new TrainingGraphBuilder(precision);
  const ops = decoderOps(g, weights.shape);
  const { hiddenSize: H, vocabSize: V, headDim: D } = weights.shape;
  const io = GRAPH_IO;
  const param = (name: string, dims: number[]) => g.input(name, 'float', dims);

  const ids = g.input(io.inputIds, 'int64', ['batch', 'sequence']);
  const cos = g.input(io.cos, 'float', ['batch', 1, 'sequence', D]);
  const sin = g.input(io.sin, 'float', ['batch', 1, 'sequence', D]);
  const bias = g.input(io.bias, 'float', ['batch', 1, 'sequence', 'sequence']);
  const rows = g.input(io.rows, 'int64', ['scored']);
  const tokens = g.input(io.targets, 'int64', ['scored']);
  const invT = g.input(io.invTemperature, 'float', []);
  const embedding = param('embedding', [V, H]);
  const layers: LayerOps[] = weights.layers.map((layer, l) => {
    const norm = (which: string, dims: number[]) => param(`norm.${l}.${which}`, dims);
    const proj = Object.fromEntries(
      LORA_MODULES.map((m): [LoraModule, ProjectionOps] => {
        const { inDim, outDim, bias: b } = layer[m];
        const weight = `w.${l}.${m}`;
        return [m, { inDim, outDim, product: floatProduct(g, param(weight, [inDim, outDim])), ...(b ? { bias: param(`b.${l}.${m}`, [outDim]) } : {}), grads: { weightGrad: weightGradOutput(weight), ...(b ? { biasGrad: weightGradOutput(`b.${l}.${m}`) } : {}) } }];
      }),
    ) as Record<LoraModule, ProjectionOps>;
    return {
      inputNorm: norm('input', [H]),
      postNorm: norm('post', [H]),
      ...(layer.qNorm ? { qNorm: norm('q', [D]) } : {}),
      ...(layer.kNorm ? { kNorm: norm('k', [D]) } : {}),
      normGrads: { input: weightGradOutput(`norm.${l}.input`), post: weightGradOutput(`norm.${l}.post`), ...(layer.qNorm ? { q: weightGradOutput(`norm.${l}.q`) } : {}), ...(layer.kNorm ? { k: weightGradOutput(`norm.${l}.k`) } : {}) },
      proj,
    };
  });

  // Forward.
  const flatIds = g.node('Reshape', [ids, g.int64s([-1])]);
  const forwardAttention = ops.attention(cos, sin, bias);
  let x = g.node('Gather', [embedding, flatIds], { axis: 0 });
  const saved: LayerSaved[] = [];
  for (const layer of layers) {
    const { out, saved: kept } = ops.layerForward(layer, x, forwardAttention, true);
    saved.push(kept);
    x = out!;
  }
  const picked = g.node('Gather', [x, rows], { axis: 0 });
  const finalNorm = param('norm.final', [H]);
  const tied = !weights.lmHead;
  const head = tied ? embedding : param('lm_head', [H, V]);
  const headForward = ops.headForward(picked, finalNorm, head, tied, tokens, invT, { logps: io.logps, entropies: io.entropies });
  g.output(io.logps, ['scored']);
  g.output(io.entropies, ['scored']);

  // Backward.
  g.phase = 'backward';
  const dlogps = g.input(io.dlogps, 'float', ['scored']);
  const dentropies = g.input(io.dentropies, 'float', ['scored']);
  const { dHidden, dTiedHead } = ops.headBackward({ hidden: picked, finalNorm, head, tied, targets: tokens, invT }, headForward, dlogps, dentropies, { finalNorm: weightGradOutput('norm.final'), head: weightGradOutput('lm_head') });
  const column = (v: string) => g.node('Unsqueeze', [v, g.int64s([1])]);
  const batchShape = g.node('Shape', [ids]);
  const rowCount = g.node('Mul', [g.node('Slice', [batchShape, g.int64s([0]), g.int64s([1])]), g.node('Slice', [batchShape, g.int64s([1]), g.int64s([2])])]);
  // A row can predict several scored tokens (a prompt's last row predicts every completion's first): their gradients add.
  let dx = g.node('ScatterND', [g.zeros(g.node('Concat', [rowCount, g.int64s([H])], { axis: 0 })), column(rows), dHidden], { reduction: 'add' });
  const backwardAttention = ops.attention(cos, sin, undefined);
  for (let l = layers.length - 1; l >= 0; l--) dx = ops.layerBackward(layers[l], saved[l], dx, backwardAttention);
  // Every row's input gradient lands on its token's embedding row; rows of one token add.
  const dEmbedding = g.node('ScatterND', [g.zeros(g.int64s([V, H])), column(flatIds), dx], { reduction: 'add' });
  g.output(dTiedHead ? g.node('Add', [dEmbedding, dTiedHead], {}, weightGradOutput('embedding')) : g.node('Identity', [dEmbedding], {}, weightGradOutput('embedding')), [V, H]);
  return g.encode('decoder');
}
