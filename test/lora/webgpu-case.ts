/**
 * Random tiny LoRA cases for the WebGPU engine's checks: every dimension drawn from a seeded
 * generator within small bounds (heads, kv heads, head dim, hidden and MLP widths, layers,
 * vocabulary, rank, prompt and completion lengths, temperature; variant and tied or untied head by the seed), an adapter with B moved
 * off zero so every A has a gradient, and random d loss / d logp and d loss / d entropy.
 */
import { createLoraAdapter, type LoraAdapter } from '../../lib/lora/adapter.js';
import type { LoraGroupInput } from '../../lib/lora/model.js';
import type { DecoderWeights } from '../../lib/lora/weights.js';
import { mulberry32 } from '../../lib/math/random.js';
import { randomDecoder } from './random-decoder.js';

export interface WebgpuCase {
  weights: DecoderWeights;
  adapter: LoraAdapter;
  group: LoraGroupInput;
  temperature: number;
  dlogps: number[][];
  dentropies: number[][];
  /** What was drawn, for the failure message. */
  summary: string;
}

/** Bounds of the drawn hidden and MLP widths (wider ones give 4-bit weights several blocks per column). */
export interface CaseWidths {
  hidden: [number, number];
  intermediate: [number, number];
}

export function webgpuCase(seed: number, widths: CaseWidths = { hidden: [3, 12], intermediate: [3, 20] }): WebgpuCase {
  const rng = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)];
  const numKvHeads = int(1, 2);
  const numHeads = numKvHeads * int(1, 3);
  const headDim = 2 * int(1, 4);
  const shape = {
    vocabSize: int(5, 24),
    hiddenSize: int(...widths.hidden),
    intermediateSize: int(...widths.intermediate),
    numLayers: int(1, 3),
    numHeads,
    numKvHeads,
    headDim,
    ropeTheta: pick([10_000, 1_000_000]),
    rmsNormEps: 1e-6,
  };
  // Variant and head cycle with the seed, so six consecutive seeds cover all six; the dimensions stay drawn.
  const variant = (['llama', 'qwen2', 'qwen3'] as const)[seed % 3];
  const tied = Math.floor(seed / 3) % 2 === 0;
  const weights = randomDecoder({ shape, tied, qkvBias: variant === 'qwen2', qkNorm: variant === 'qwen3', seed: seed + 1 });
  const r = int(1, 4);
  const adapter = createLoraAdapter(shape, { r, alpha: 2 * r, seed: seed + 2 });
  for (const layer of adapter.layers) for (const pair of Object.values(layer)) for (let i = 0; i < pair.B.length; i++) pair.B[i] = (2 * rng() - 1) * 0.3;
  const draw = (n: number) => Array.from({ length: n }, () => int(0, shape.vocabSize - 1));
  const group = { promptIds: draw(int(1, 5)), completions: Array.from({ length: int(1, 3) }, () => draw(int(1, 5))) };
  const temperature = 0.6 + 0.8 * rng();
  const dlogps = group.completions.map((c) => c.map(() => 2 * rng() - 1));
  const dentropies = group.completions.map((c) => c.map(() => 2 * rng() - 1));
  const summary = `${variant}${tied ? ' tied' : ' untied'}, ${JSON.stringify(shape)}, r ${r}, prompt ${group.promptIds.length}, completions ${group.completions.map((c) => c.length).join('/')}, T ${temperature.toFixed(2)}`;
  return { weights, adapter, group, temperature, dlogps, dentropies, summary };
}
