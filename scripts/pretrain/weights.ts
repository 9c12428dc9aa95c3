/** The model builder's weights (scripts/build-model/weights.ts) as the engine's DecoderWeights and back: the same arrays, no copies. */
import type { DecoderShape, DecoderWeights } from '../../lib/weights/decoder.js';
import type { ModelSpec } from '../build-model/spec.js';
import type { Weights } from '../build-model/weights.js';

export function shapeOf(spec: ModelSpec, vocabSize: number): DecoderShape {
  const { hiddenSize, intermediateSize, numLayers, numHeads, numKvHeads, headDim, ropeTheta, rmsNormEps } = spec;
  return { vocabSize, hiddenSize, intermediateSize, numLayers, numHeads, numKvHeads, headDim, ropeTheta, rmsNormEps };
}

export function toDecoder(spec: ModelSpec, w: Weights): DecoderWeights {
  const shape = shapeOf(spec, w.embedTokens.length / spec.hiddenSize);
  const H = spec.hiddenSize;
  const qDim = spec.numHeads * spec.headDim;
  const kvDim = spec.numKvHeads * spec.headDim;
  const F = spec.intermediateSize;
  return {
    shape,
    embedding: w.embedTokens,
    layers: w.layers.map((l) => ({
      inputNorm: l.inputNorm,
      postNorm: l.postNorm,
      q_proj: { inDim: H, outDim: qDim, weight: l.q },
      k_proj: { inDim: H, outDim: kvDim, weight: l.k },
      v_proj: { inDim: H, outDim: kvDim, weight: l.v },
      o_proj: { inDim: qDim, outDim: H, weight: l.o },
      gate_proj: { inDim: H, outDim: F, weight: l.gate },
      up_proj: { inDim: H, outDim: F, weight: l.up },
      down_proj: { inDim: F, outDim: H, weight: l.down },
    })),
    finalNorm: w.finalNorm,
    ...(w.lmHead ? { lmHead: w.lmHead } : {}),
  };
}

export function toBuilder(d: DecoderWeights): Weights {
  const f32 = (x: unknown) => x as Float32Array;
  return {
    embedTokens: d.embedding,
    layers: d.layers.map((l) => ({
      inputNorm: l.inputNorm,
      q: f32(l.q_proj.weight),
      k: f32(l.k_proj.weight),
      v: f32(l.v_proj.weight),
      o: f32(l.o_proj.weight),
      postNorm: l.postNorm,
      gate: f32(l.gate_proj.weight),
      up: f32(l.up_proj.weight),
      down: f32(l.down_proj.weight),
    })),
    finalNorm: d.finalNorm,
    ...(d.lmHead ? { lmHead: d.lmHead } : {}),
  };
}
