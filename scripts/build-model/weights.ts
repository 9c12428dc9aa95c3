/**
 * Deterministic weights. Uniform distributions with the variance of the usual fan-in scaling, drawn
 * in a fixed order from the math core's mulberry32 (integer arithmetic only), so a seed gives
 * byte-identical files anywhere. Projection matrices are stored [in, out], as ONNX MatMul reads
 * them. The embedding is scaled so that a tied head yields logits of about unit standard
 * deviation: sampled text is varied but not uniform, and the two end tokens come up now and then.
 */
import { mulberry32, type Rng } from '../../lib/math/random.js';
import type { ModelSpec } from './spec.js';

export interface LayerWeights {
  inputNorm: Float32Array;
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  o: Float32Array;
  postNorm: Float32Array;
  gate: Float32Array;
  up: Float32Array;
  down: Float32Array;
  qBias?: Float32Array;
  kBias?: Float32Array;
  vBias?: Float32Array;
  qNorm?: Float32Array;
  kNorm?: Float32Array;
}

export interface Weights {
  embedTokens: Float32Array;
  layers: LayerWeights[];
  finalNorm: Float32Array;
  /** Absent when the head is tied to the embedding. */
  lmHead?: Float32Array;
}

export function initWeights(spec: ModelSpec, vocabSize: number): Weights {
  const rng = mulberry32(spec.seed);
  const { hiddenSize: hidden, intermediateSize: inter, numHeads, numKvHeads, headDim } = spec;
  const residualScale = 1 / Math.sqrt(2 * spec.numLayers);
  const embedTokens = uniform(rng, vocabSize * hidden, 1 / Math.sqrt(hidden));
  const layers = Array.from({ length: spec.numLayers }, (): LayerWeights => ({
    inputNorm: aroundOne(rng, hidden),
    q: uniform(rng, hidden * numHeads * headDim, 1 / Math.sqrt(hidden)),
    k: uniform(rng, hidden * numKvHeads * headDim, 1 / Math.sqrt(hidden)),
    v: uniform(rng, hidden * numKvHeads * headDim, 1 / Math.sqrt(hidden)),
    o: uniform(rng, numHeads * headDim * hidden, residualScale / Math.sqrt(numHeads * headDim)),
    postNorm: aroundOne(rng, hidden),
    gate: uniform(rng, hidden * inter, 1 / Math.sqrt(hidden)),
    up: uniform(rng, hidden * inter, 1 / Math.sqrt(hidden)),
    down: uniform(rng, inter * hidden, residualScale / Math.sqrt(inter)),
  }));
  const finalNorm = aroundOne(rng, hidden);
  const lmHead = spec.tieWordEmbeddings ? undefined : uniform(rng, hidden * vocabSize, 1 / Math.sqrt(hidden));
  // Drawn last, so the specs without them keep their files byte for byte.
  for (const layer of layers) {
    if (spec.qkvBias) {
      layer.qBias = uniform(rng, numHeads * headDim, 0.2);
      layer.kBias = uniform(rng, numKvHeads * headDim, 0.2);
      layer.vBias = uniform(rng, numKvHeads * headDim, 0.2);
    }
    if (spec.qkNorm) {
      layer.qNorm = aroundOne(rng, headDim);
      layer.kNorm = aroundOne(rng, headDim);
    }
  }
  return { embedTokens, layers, finalNorm, lmHead };
}

/** Uniform on [-a, a] with standard deviation `std` (a = std * sqrt(3)). */
function uniform(rng: Rng, n: number, std: number): Float32Array {
  const a = std * Math.sqrt(3);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (2 * rng() - 1) * a;
  return out;
}

/** Norm weights near 1 rather than exactly 1, so a graph that ignored them would be caught. */
function aroundOne(rng: Rng, n: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = 1 + (2 * rng() - 1) * 0.1;
  return out;
}
