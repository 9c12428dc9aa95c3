/**
 * Llama 3's rotary scaling at Llama-3.2-1B-Instruct's config (theta 500000, head_dim 64, factor
 * 32, low 1, high 4, original 8192): short wavelengths kept, long ones divided by the factor, the
 * band between interpolated; and config.json's rope_scaling read as transformers reads it.
 */
import { describe, expect, it } from 'vitest';
import { ModelLoadError, UnsupportedError } from '../../lib/errors.js';
import { ropeInvFreq, ropeScalingOf } from '../../lib/policy/onnx/structure/rope.js';

const LLAMA_3_2 = { rope_type: 'llama3', factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 } as const;

describe('ropeInvFreq', () => {
  it("keeps high frequencies, divides low ones by the factor and interpolates between, as transformers' _compute_llama3_parameters", () => {
    const plain = ropeInvFreq({ headDim: 64, ropeTheta: 500000 });
    const scaled = ropeInvFreq({ headDim: 64, ropeTheta: 500000, ropeScaling: LLAMA_3_2 });
    expect(plain[0]).toBe(1);
    expect(plain[31]).toBeCloseTo(500000 ** (-62 / 64), 12);
    const bands = { kept: 0, divided: 0, between: 0 };
    plain.forEach((f, i) => {
      const wavelength = (2 * Math.PI) / f;
      if (wavelength < 8192 / 4) {
        bands.kept++;
        expect(scaled[i]).toBe(f);
      } else if (wavelength > 8192) {
        bands.divided++;
        expect(scaled[i]).toBe(Math.fround(f / 32));
      } else {
        bands.between++;
        // smooth = 8192 / wavelength - 1 runs from 0 (at the low end, f / 32) to 1 (at the high end, f).
        const smooth = (8192 / wavelength - 1) / 3;
        expect(scaled[i]).toBeCloseTo((1 - smooth) * (f / 32) + smooth * f, 9);
        expect(scaled[i]).toBeLessThan(f);
        expect(scaled[i]).toBeGreaterThan(f / 32);
      }
    });
    // Llama 3.2's config puts frequencies in all three bands.
    expect(bands.kept).toBeGreaterThan(0);
    expect(bands.divided).toBeGreaterThan(0);
    expect(bands.between).toBeGreaterThan(0);
  });
});

describe('ropeScalingOf', () => {
  it('reads llama3, treats absent, null and default as plain rotary, and refuses any other scheme by name', () => {
    expect(ropeScalingOf({ rope_scaling: { ...LLAMA_3_2 } })).toEqual(LLAMA_3_2);
    expect(ropeScalingOf({})).toBeUndefined();
    expect(ropeScalingOf({ rope_scaling: null })).toBeUndefined();
    expect(ropeScalingOf({ rope_scaling: { rope_type: 'default' } })).toBeUndefined();
    for (const [scaling, name] of [[{ rope_type: 'yarn', factor: 4 }, 'yarn'], [{ type: 'linear', factor: 2 }, 'linear'], [{ rope_type: 'dynamic', factor: 2 }, 'dynamic']] as const) {
      expect(() => ropeScalingOf({ rope_scaling: scaling })).toThrow(UnsupportedError);
      expect(() => ropeScalingOf({ rope_scaling: scaling })).toThrow(name);
    }
    expect(() => ropeScalingOf({ rope_scaling: { ...LLAMA_3_2, factor: 'x' } })).toThrow(ModelLoadError);
    expect(() => ropeScalingOf({ rope_scaling: { ...LLAMA_3_2, low_freq_factor: 4, high_freq_factor: 1 } })).toThrow(ModelLoadError);
    expect(() => ropeScalingOf({ rope_scaling: 'llama3' })).toThrow(ModelLoadError);
  });
});
