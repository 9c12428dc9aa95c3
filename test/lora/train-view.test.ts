/**
 * The CLI's step line of a LoRA (or gradient) run shows the step's log-prob drift between the
 * sampling pass and the training forward: its first update's mean and max, from the step-end
 * event's training metrics; a step without it (a training-free run's) shows none.
 */
import { describe, expect, it } from 'vitest';
import type { TrainStepMetrics } from '../../lib/train/metrics.js';
import { Progress, type CliEvent } from '../../lib/cli/train-view.js';

const progress = { step: 1, totalSteps: 2, epoch: 1, epochs: 1, itemsDone: 2, totalItems: 4 };

function view() {
  const err: string[] = [];
  return { err, progress: new Progress({ stdout: () => undefined, stderr: (t) => err.push(t), interactive: false }, false) };
}

describe('the CLI step line', () => {
  it("shows the step's first update's log-prob drift", () => {
    const { err, progress: p } = view();
    const first = { logprobDrift: { mean: 1.25e-6, max: 3.5e-5 } } as TrainStepMetrics;
    const second = { logprobDrift: { mean: 0.02, max: 0.3 } } as TrainStepMetrics;
    p.on({ type: 'step-end', step: 1, epoch: 1, batch: 0, stats: {}, training: [first, second], progress } as unknown as CliEvent);
    expect(err.join('')).toMatch(/step 1\/2 · logp drift 1\.3e-6 \(max 3\.5e-5\)/);
  });

  it('shows none for a step without training metrics', () => {
    const { err, progress: p } = view();
    p.on({ type: 'step-end', step: 1, epoch: 1, batch: 0, stats: {}, progress } as unknown as CliEvent);
    expect(err.join('')).not.toMatch(/drift/);
  });
});
