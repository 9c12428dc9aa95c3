import { expect } from 'vitest';
import { readLoraAdapterFile, type LoraAdapterFile } from '../../../lib/grad.js';

/**
 * A stored LoRA step was trained by the engine of its day (TypeScript kernels, float64 sums); its
 * resume and today's uninterrupted run train on onnxruntime's float32 graphs. Two engines: the
 * adapters agree to a tolerance, not bit for bit. AdamW's first updates move each weight by about
 * the learning rate whatever its gradient's size, so a weight whose gradient is near zero can
 * move differently on the two engines; the comparison is of each tensor as a whole: the distance
 * within 1e-3 of its norm (1.6e-4 at worst on the v5 fixture).
 */
export function expectSameLoraAdapter(actual: LoraAdapterFile, expectedFile: LoraAdapterFile): void {
  const strip = ({ createdAt: _t, layers: _l, ...rest }: LoraAdapterFile) => rest;
  expect(strip(actual)).toEqual(strip(expectedFile));
  const a = readLoraAdapterFile(actual);
  const b = readLoraAdapterFile(expectedFile);
  b.layers.forEach((layer, l) => {
    for (const [module, pair] of Object.entries(layer)) {
      for (const key of ['A', 'B'] as const) {
        const want = pair[key];
        const got = a.layers[l][module as keyof typeof layer]![key];
        const distance = Math.hypot(...Array.from(want, (v, i) => v - got[i]));
        expect(distance, `layer ${l} ${module}.${key}`).toBeLessThan(1e-3 * Math.hypot(...want));
      }
    }
  });
}
