/**
 * The rotary embedding's inverse frequencies, base^(-2i/d), and Llama 3's `rope_scaling`
 * (`rope_type: 'llama3'`) as transformers' `_compute_llama3_parameters` applies it: wavelengths
 * shorter than original_max / high_freq_factor are kept, those longer than original_max /
 * low_freq_factor are divided by `factor`, and the band between is interpolated smoothly.
 */
import type { ModelSpec } from './spec.js';

export function ropeInvFreq(spec: Pick<ModelSpec, 'headDim' | 'ropeTheta' | 'ropeScaling'>): Float32Array {
  const half = spec.headDim / 2;
  const out = new Float32Array(half);
  for (let i = 0; i < half; i++) out[i] = 1 / spec.ropeTheta ** ((2 * i) / spec.headDim);
  const scaling = spec.ropeScaling;
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
