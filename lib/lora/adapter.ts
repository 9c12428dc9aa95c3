/**
 * A LoRA adapter on the projections of every decoder layer, as PEFT defines it:
 *
 *   y = x W + s (x A^T) B^T,   A [r, in], B [out, r],   s = alpha / r (alpha / sqrt(r) with rsLoRA)
 *
 * A starts as PEFT's `kaiming_uniform_(a = sqrt(5))` (uniform on +-1/sqrt(in)) from a seeded
 * generator and B at zero, so training starts exactly at the base model. A and B are stored in
 * PEFT's own layouts, so export and import are copies.
 */
import { InvalidInputError } from '../errors.js';
import { mulberry32 } from '../math/random.js';
import { LORA_MODULES, moduleDims, type DecoderShape, type LoraModule } from '../weights/decoder.js';

export interface LoraOptions {
  /** Rank; default 8. */
  r?: number;
  /** Scale numerator; default 16 (s = alpha / r = 2 at the default rank). */
  alpha?: number;
  /** Projections to adapt; default all seven (PEFT's `all-linear` on a Llama-family decoder). */
  targetModules?: readonly LoraModule[];
  /** rsLoRA's scale alpha / sqrt(r); default false. */
  useRslora?: boolean;
  /** Seed of A's initialisation; default 0. */
  seed?: number;
}

export interface LoraConfig {
  r: number;
  alpha: number;
  targetModules: LoraModule[];
  useRslora: boolean;
}

export interface LoraPair {
  inDim: number;
  outDim: number;
  /** [r, inDim]. */
  A: Float32Array;
  /** [outDim, r]. */
  B: Float32Array;
}

export interface LoraAdapter {
  config: LoraConfig;
  /** s in y = x W + s x A^T B^T. */
  scale: number;
  /** Per layer, the adapted modules. */
  layers: Array<Partial<Record<LoraModule, LoraPair>>>;
}

export const LORA_DEFAULTS = { r: 8, alpha: 16, targetModules: LORA_MODULES, useRslora: false, seed: 0 } as const;

export function resolveLoraConfig(options: LoraOptions = {}): LoraConfig {
  if (options === null || typeof options !== 'object') throw new InvalidInputError('lora', 'must be an object { r?, alpha?, targetModules? }.');
  const r = options.r ?? LORA_DEFAULTS.r;
  const alpha = options.alpha ?? LORA_DEFAULTS.alpha;
  if (!Number.isInteger(r) || r < 1) throw new InvalidInputError('lora.r', `must be an integer >= 1, got ${String(r)}.`);
  if (typeof alpha !== 'number' || !Number.isFinite(alpha) || alpha <= 0) throw new InvalidInputError('lora.alpha', `must be a finite number > 0, got ${String(alpha)}.`);
  const targets = options.targetModules ?? LORA_DEFAULTS.targetModules;
  if (!Array.isArray(targets) || targets.length === 0) throw new InvalidInputError('lora.targetModules', `must list some of ${LORA_MODULES.join(', ')}.`);
  for (const t of targets) {
    if (!(LORA_MODULES as readonly string[]).includes(t)) throw new InvalidInputError('lora.targetModules', `unknown module "${String(t)}"; use ${LORA_MODULES.join(', ')}.`);
  }
  // Canonical order, no repeats: the same set always lays out (and exports) the same way.
  const targetModules = LORA_MODULES.filter((m) => targets.includes(m));
  return { r, alpha, targetModules, useRslora: options.useRslora === true };
}

export function loraScale(config: LoraConfig): number {
  return config.useRslora ? config.alpha / Math.sqrt(config.r) : config.alpha / config.r;
}

/** A fresh adapter: A seeded uniform on +-1/sqrt(in) (PEFT's init), B zero. */
export function createLoraAdapter(shape: DecoderShape, options: LoraOptions = {}): LoraAdapter {
  const config = resolveLoraConfig(options);
  const seed = options.seed ?? LORA_DEFAULTS.seed;
  if (!Number.isFinite(seed)) throw new InvalidInputError('lora.seed', `must be a number, got ${String(seed)}.`);
  const rng = mulberry32(seed);
  const layers = Array.from({ length: shape.numLayers }, () => {
    const layer: Partial<Record<LoraModule, LoraPair>> = {};
    for (const module of config.targetModules) {
      const { inDim, outDim } = moduleDims(shape, module);
      const bound = 1 / Math.sqrt(inDim);
      const A = new Float32Array(config.r * inDim);
      for (let i = 0; i < A.length; i++) A[i] = (2 * rng() - 1) * bound;
      layer[module] = { inDim, outDim, A, B: new Float32Array(outDim * config.r) };
    }
    return layer;
  });
  return { config, scale: loraScale(config), layers };
}

/** An adapter of the same layout with every A and B at zero (gradients, optimizer moments). */
export function zerosLike(adapter: LoraAdapter): LoraAdapter {
  return {
    config: adapter.config,
    scale: adapter.scale,
    layers: adapter.layers.map((layer) =>
      Object.fromEntries(Object.entries(layer).map(([m, p]) => [m, { inDim: p.inDim, outDim: p.outDim, A: new Float32Array(p.A.length), B: new Float32Array(p.B.length) }])),
    ),
  };
}

/** Every A and B in a fixed order (layer, module, A then B): the flat view the optimizer walks. */
export function loraTensors(adapter: LoraAdapter): Float32Array[] {
  const out: Float32Array[] = [];
  for (const layer of adapter.layers) {
    for (const module of LORA_MODULES) {
      const pair = layer[module];
      if (pair) out.push(pair.A, pair.B);
    }
  }
  return out;
}

export function loraParameterCount(adapter: LoraAdapter): number {
  return loraTensors(adapter).reduce((n, t) => n + t.length, 0);
}
