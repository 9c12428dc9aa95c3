/**
 * The duration said before Start (step-times.ts): from the bench's measurement of that very model,
 * method, task and per-step shape, with the run's own step count; "unknown" for any other, and for
 * runs a person rates. The measurements are of the settings the page applies for each case.
 */
import { describe, expect, it } from 'vitest';
import { choiceOf, suggestedSettings } from '../../site/lib/methods.js';
import { ONNX_MODELS } from '../../site/lib/models.js';
import { INITIAL_SETUP, runPlan } from '../../site/lib/setup.js';
import { STEP_TIMES } from '../../site/lib/step-times.data.js';
import { durationBeforeStart, stepTimeOf, type StepTime } from '../../site/lib/step-times.js';

const lora: StepTime = { model: 'skill', method: 'lora', task: 'sort-words', groupSize: 8, batchSize: 16, maxNewTokens: 24, secondsPerStep: 2.5, startupSeconds: 9 };

describe('the duration before Start', () => {
  it('multiplies the measured step by the run’s steps, after the measured startup', () => {
    const setup = { ...INITIAL_SETUP };
    const { steps } = runPlan(setup);
    expect(durationBeforeStart(setup, 'skill', steps, [lora])).toMatch(/^About 4 min 09 s \(measured in headless Chromium .*: 9 s to load and answer the held-out prompts, then 2\.5 s per step for 96 steps; BENCHMARKS “playground-steps”\), plus a held-out evaluation after each epoch;/);
    // More epochs, the same step: the estimate follows the steps.
    const longer = { ...setup, epochs: 4 };
    expect(durationBeforeStart(longer, 'skill', runPlan(longer).steps, [lora])).toMatch(/^About 16 min 09 s .* for 384 steps;/);
  });

  it('says unknown where the shape, the task, the method or the model was not measured', () => {
    const unknown = /^How long it takes is unknown before Start: no run of this method, task, group size, batch and reply length on this model was measured/;
    for (const change of [{ groupSize: 4 }, { batchSize: 8 }, { maxNewTokens: 16 }, { task: 'count-letter' }, { method: 'gradient' }]) {
      expect(durationBeforeStart({ ...INITIAL_SETUP, ...change }, 'skill', 16, [lora])).toMatch(unknown);
    }
    expect(durationBeforeStart(INITIAL_SETUP, 'tiny', 16, [lora])).toMatch(unknown);
    expect(durationBeforeStart({ ...INITIAL_SETUP, rateMyself: true }, 'skill', 16, [lora])).toMatch(/^How long it takes is up to you/);
  });

  it('holds measurements of the settings the page applies, the first run’s among them', () => {
    expect(stepTimeOf(INITIAL_SETUP, ONNX_MODELS[0].id)).toBeDefined();
    for (const t of STEP_TIMES) {
      const s = suggestedSettings(choiceOf(t.method), t.model, t.task);
      expect({ groupSize: t.groupSize, batchSize: t.batchSize, maxNewTokens: t.maxNewTokens }).toEqual({ groupSize: s.groupSize, batchSize: s.batchSize, maxNewTokens: s.maxNewTokens });
      expect(t.secondsPerStep).toBeGreaterThan(0);
    }
  });
});
