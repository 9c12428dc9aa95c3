/** Small random decoders in every variant the engine supports, built in the test (no ONNX file). */
import { mulberry32 } from '../../lib/math/random.js';
import { moduleDims, LORA_MODULES, type DecoderShape, type DecoderWeights, type LoraModule, type Projection } from '../../lib/weights/decoder.js';

export interface Variant {
  shape: DecoderShape;
  tied: boolean;
  /** Qwen2: biases on q, k and v. */
  qkvBias?: boolean;
  /** Qwen3: per-head RMSNorm on q and k. */
  qkNorm?: boolean;
  seed: number;
}

export function randomDecoder(v: Variant): DecoderWeights {
  const rng = mulberry32(v.seed);
  const uniform = (n: number, a: number) => Float32Array.from({ length: n }, () => (2 * rng() - 1) * a);
  const aroundOne = (n: number) => Float32Array.from({ length: n }, () => 1 + (2 * rng() - 1) * 0.2);
  const { shape } = v;
  const layers = Array.from({ length: shape.numLayers }, () => {
    const projections = Object.fromEntries(
      LORA_MODULES.map((m): [LoraModule, Projection] => {
        const { inDim, outDim } = moduleDims(shape, m);
        const bias = v.qkvBias && (m === 'q_proj' || m === 'k_proj' || m === 'v_proj') ? uniform(outDim, 0.3) : undefined;
        return [m, { inDim, outDim, weight: uniform(inDim * outDim, 1.2 / Math.sqrt(inDim)), ...(bias ? { bias } : {}) }];
      }),
    ) as Record<LoraModule, Projection>;
    return {
      ...projections,
      inputNorm: aroundOne(shape.hiddenSize),
      postNorm: aroundOne(shape.hiddenSize),
      ...(v.qkNorm ? { qNorm: aroundOne(shape.headDim), kNorm: aroundOne(shape.headDim) } : {}),
    };
  });
  return {
    shape,
    embedding: uniform(shape.vocabSize * shape.hiddenSize, 1),
    layers,
    finalNorm: aroundOne(shape.hiddenSize),
    ...(v.tied ? {} : { lmHead: uniform(shape.hiddenSize * shape.vocabSize, 1 / Math.sqrt(shape.hiddenSize)) }),
  };
}
