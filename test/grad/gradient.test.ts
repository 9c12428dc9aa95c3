/**
 * The adapter's analytic gradient against finite differences of an independent float64 reference
 * of the loss (fixtures.ts), on the head graphs run by onnxruntime-node (HeadGraphs, what
 * headEngine trains a CPU or WASM policy with); the WebGPU engine is checked the same way in
 * Chromium (browser.test.ts).
 */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { grpoObjective } from '../../lib/train/objective.js';
import { HeadGraphs } from '../../lib/train/graph/head-graphs.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { finiteDifferences, gradCase, referenceLoss, relativeError, type GradCase } from './fixtures.js';

async function analytic(c: GradCase) {
  const engine = new HeadGraphs(c.weights, async () => ort as unknown as GraphRuntime);
  await engine.writeStates(c.z, c.h);
  const stats = await engine.forward(c.layout.targets, c.temperature);
  const objective = grpoObjective(c.batch, c.layout, stats, c.loss);
  const norm = await engine.backward(c.layout.targets, objective.dLogp, objective.dEntropy, c.temperature);
  return { objective, norm, gradients: await engine.gradients() };
}

describe('head graphs gradient', () => {
  const cases: Array<[string, GradCase]> = [
    ['dapo with KL and entropy bonus, T = 0.7', gradCase(1)],
    ['grpo loss, T = 1, wide clipping', gradCase(2, { temperature: 1, loss: { lossType: 'grpo', beta: 0.1, entropyCoef: -0.05, epsilon: 0.5 } })],
    ['bnpo, sequence-level ratios (GSPO)', gradCase(3, { loss: { lossType: 'bnpo', importanceSamplingLevel: 'sequence', beta: 0.02, entropyCoef: 0.02 } })],
    ['dr_grpo with asymmetric clipping', gradCase(4, { temperature: 1.3, loss: { lossType: 'dr_grpo', maxCompletionLength: 4, epsilon: 0.1, epsilonHigh: 0.28, beta: 0 } })],
  ];

  it.each(cases)('matches finite differences of dA and dB to 1e-3: %s', async (_, c) => {
    const { objective, gradients, norm } = await analytic(c);
    // The loss the engine's statistics give is the reference loss.
    expect(objective.loss).toBeCloseTo(referenceLoss(c, Float64Array.from(c.weights.a), Float64Array.from(c.weights.b)), 6);
    const fd = finiteDifferences(c);
    expect(relativeError(gradients.a, fd.a)).toBeLessThan(1e-3);
    expect(relativeError(gradients.b, fd.b)).toBeLessThan(1e-3);
    // Not a vacuous check: both gradients carry signal, and the norm is theirs.
    expect(Math.max(...fd.a.map(Math.abs))).toBeGreaterThan(1e-3);
    expect(Math.max(...fd.b.map(Math.abs))).toBeGreaterThan(1e-3);
    const squares = [...gradients.a, ...gradients.b].reduce((s, x) => s + x * x, 0);
    expect(norm).toBeCloseTo(Math.sqrt(squares), 5);
  });

  it('some tokens of the case are clipped, so the check covers the held-constant branch', async () => {
    const { objective } = await analytic(gradCase(1));
    expect(objective.metrics.clipRatioRegion).toBeGreaterThan(0);
  });
});
