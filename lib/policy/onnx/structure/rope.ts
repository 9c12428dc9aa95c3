/**
 * The rotary embedding's inverse frequencies as config.json describes them: base^(-2i/d), and
 * Llama 3's `rope_scaling` (`rope_type: 'llama3'`, Llama 3.1 / 3.2) as transformers'
 * `_compute_llama3_parameters` applies it: wavelengths shorter than original_max /
 * high_freq_factor are kept, those longer than original_max / low_freq_factor are divided by
 * `factor`, and the band between is interpolated smoothly. The training graphs take their
 * rotary tables from here, and webgrpo's model builder puts the same frequencies in the graphs
 * it writes, so the two cannot drift apart.
 */
import { ModelLoadError, UnsupportedError } from '../../../errors.js';

/** config.json's `rope_scaling` for Llama 3.1 / 3.2. */
export interface Llama3RopeScaling {
  rope_type: 'llama3';
  factor: number;
  low_freq_factor: number;
  high_freq_factor: number;
  original_max_position_embeddings: number;
}

export interface RopeShape {
  headDim: number;
  ropeTheta: number;
  ropeScaling?: Llama3RopeScaling;
}

/**
 * [headDim / 2] inverse frequencies in float32, as transformers computes them (a float32 tensor),
 * so a position times them is the angle an export's graph takes.
 */
export function ropeInvFreq(shape: RopeShape): Float32Array {
  const half = shape.headDim / 2;
  const out = new Float32Array(half);
  for (let i = 0; i < half; i++) out[i] = 1 / shape.ropeTheta ** ((2 * i) / shape.headDim);
  const scaling = shape.ropeScaling;
  if (!scaling) return out;
  const { factor, low_freq_factor: low, high_freq_factor: high, original_max_position_embeddings: original } = scaling;
  const lowWavelength = original / low;
  const highWavelength = original / high;
  for (let i = 0; i < half; i++) {
    const wavelength = (2 * Math.PI) / out[i];
    if (wavelength < highWavelength) continue;
    if (wavelength > lowWavelength) {
      out[i] /= factor;
      continue;
    }
    const smooth = (original / wavelength - low) / (high - low);
    out[i] = (1 - smooth) * (out[i] / factor) + smooth * out[i];
  }
  return out;
}

/**
 * config.json's `rope_scaling`: undefined for plain rotary (absent, null or rope_type 'default'),
 * the llama3 parameters when they are well formed. Any other scheme (linear, dynamic, yarn,
 * longrope, ...) is an UnsupportedError naming it: training with plain frequencies would train a
 * different model than the one that samples.
 */
export function ropeScalingOf(config: Record<string, unknown>): Llama3RopeScaling | undefined {
  const raw = config.rope_scaling;
  if (raw === null || raw === undefined) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ModelLoadError('config.json\'s rope_scaling must be an object or null.');
  const scaling = raw as Record<string, unknown>;
  // Older configs spell the key `type`; transformers reads either.
  const type = scaling.rope_type ?? scaling.type;
  if (type === 'default') return undefined;
  if (type !== 'llama3') throw new UnsupportedError(`rope_scaling with rope_type ${JSON.stringify(type)} is not supported by the training engines; plain rotary and 'llama3' are.`);
  const num = (key: keyof Llama3RopeScaling): number => {
    const value = scaling[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new ModelLoadError(`config.json's llama3 rope_scaling needs a positive number ${key}; it has ${JSON.stringify(value)}.`);
    return value;
  };
  const out: Llama3RopeScaling = {
    rope_type: 'llama3',
    factor: num('factor'),
    low_freq_factor: num('low_freq_factor'),
    high_freq_factor: num('high_freq_factor'),
    original_max_position_embeddings: num('original_max_position_embeddings'),
  };
  if (out.high_freq_factor <= out.low_freq_factor) throw new ModelLoadError(`config.json's llama3 rope_scaling needs high_freq_factor (${out.high_freq_factor}) above low_freq_factor (${out.low_freq_factor}).`);
  return out;
}
