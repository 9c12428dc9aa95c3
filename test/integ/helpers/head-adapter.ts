import { expect } from 'vitest';
import { readAdapterFile, type AdapterFile } from '../../../lib/grad.js';

/**
 * A stored head-adapter step was trained by the engine of its day (TypeScript kernels in
 * float64); its resume and today's uninterrupted run train on onnxruntime's float32 graphs. Two
 * engines: the adapters agree to a tolerance (1e-4 of the largest weight), not bit for bit.
 */
export function expectSameHeadAdapter(actual: AdapterFile, expectedFile: AdapterFile): void {
  const a = readAdapterFile(actual);
  const b = readAdapterFile(expectedFile);
  expect({ ...actual, a: '', b: '', createdAt: '' }).toEqual({ ...expectedFile, a: '', b: '', createdAt: '' });
  for (const key of ['a', 'b'] as const) {
    const scale = Math.max(...b[key].map(Math.abs));
    const worst = Math.max(...a[key].map((v, i) => Math.abs(v - b[key][i])));
    expect(worst, key).toBeLessThan(1e-4 * scale);
  }
}
