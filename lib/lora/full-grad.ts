/**
 * Full-parameter training on the LoRA engine: the same forward and backward (model.ts), with the
 * backward adding d loss / d every base weight (each projection and bias, both RMSNorm weights of
 * every layer and the per-head q/k norms, the final norm, the embedding, an untied head) into a
 * gradient in the weights' own layout. Any d loss / d logp drives it, as it drives LoRA: supervised
 * fine-tuning is dlogp = -1/N on each of the N answer tokens (the mean negative log-likelihood).
 *
 * The bare model runs under an adapter that adapts no projection, so the LoRA path is unchanged.
 * AdamW over every weight is the full-parameter engine's (lib/train/decoder-engine.ts).
 */
import { UnsupportedError } from '../errors.js';
import type { LoraAdapter } from './adapter.js';
import { groupPass, type LoraForwardOptions, type LoraGroupInput } from './model.js';
import { LORA_MODULES, type DecoderLayerWeights, type DecoderWeights, type Projection } from './weights.js';

/** A forward over the bare model, kept for its backward into every weight. */
export interface DecoderGroupPass {
  /** Per completion, the log-probs of its tokens. */
  logprobs: number[][];
  /** Per completion, the entropy of the distribution each of its tokens was scored under. */
  entropies: number[][];
  /**
   * Adds d loss / d every weight into `grad` (zerosLikeDecoder(weights)) for the given d loss / d logp
   * (and d loss / d entropy when the loss has an entropy term).
   */
  backward(dlogps: ReadonlyArray<ArrayLike<number>>, grad: DecoderWeights, dentropies?: ReadonlyArray<ArrayLike<number>>): void;
}

export function decoderGroupForward(weights: DecoderWeights, group: LoraGroupInput, options: LoraForwardOptions = {}): DecoderGroupPass {
  const pass = groupPass(weights, bareAdapter(weights.layers.length), group, options);
  return { logprobs: pass.logprobs, entropies: pass.entropies, backward: (dlogps, grad, dentropies) => pass.backward(dlogps, { full: grad }, dentropies) };
}

/** A decoder of the same shape with every weight at zero: a gradient or an optimizer moment. */
export function zerosLikeDecoder(weights: DecoderWeights): DecoderWeights {
  const zeros = (a: Float32Array) => new Float32Array(a.length);
  const projection = (p: Projection, where: string): Projection => {
    if (!(p.weight instanceof Float32Array)) throw new UnsupportedError(`${where} is 4-bit; full-parameter training needs fp32 or fp16 weights.`);
    return { inDim: p.inDim, outDim: p.outDim, weight: zeros(p.weight), ...(p.bias ? { bias: zeros(p.bias) } : {}) };
  };
  return {
    shape: weights.shape,
    embedding: zeros(weights.embedding),
    layers: weights.layers.map((layer, l): DecoderLayerWeights => {
      const out = {
        inputNorm: zeros(layer.inputNorm),
        postNorm: zeros(layer.postNorm),
        ...(layer.qNorm ? { qNorm: zeros(layer.qNorm) } : {}),
        ...(layer.kNorm ? { kNorm: zeros(layer.kNorm) } : {}),
      } as DecoderLayerWeights;
      for (const module of LORA_MODULES) out[module] = projection(layer[module], `Layer ${l} ${module}`);
      return out;
    }),
    finalNorm: zeros(weights.finalNorm),
    ...(weights.lmHead ? { lmHead: zeros(weights.lmHead) } : {}),
  };
}

/** Every weight tensor in a fixed order (embedding; per layer norms, projections, biases; final norm; head). */
export function decoderTensors(weights: DecoderWeights): Float32Array[] {
  const out: Float32Array[] = [weights.embedding];
  weights.layers.forEach((layer, l) => {
    out.push(layer.inputNorm, layer.postNorm);
    if (layer.qNorm) out.push(layer.qNorm);
    if (layer.kNorm) out.push(layer.kNorm);
    for (const module of LORA_MODULES) {
      const { weight, bias } = layer[module];
      if (!(weight instanceof Float32Array)) throw new UnsupportedError(`Layer ${l} ${module} is 4-bit; full-parameter training needs fp32 or fp16 weights.`);
      out.push(weight);
      if (bias) out.push(bias);
    }
  });
  out.push(weights.finalNorm);
  if (weights.lmHead) out.push(weights.lmHead);
  return out;
}

export function decoderParameterCount(weights: DecoderWeights): number {
  return decoderTensors(weights).reduce((n, t) => n + t.length, 0);
}

/** An adapter that adapts nothing: the bare model through the LoRA engine's passes. */
function bareAdapter(layers: number): LoraAdapter {
  return { config: { r: 1, alpha: 1, targetModules: [], useRslora: false }, scale: 1, layers: Array.from({ length: layers }, () => ({})) };
}
