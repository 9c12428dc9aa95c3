/**
 * The one registry, filled explicitly: the built-in methods are a list (the gradient method under
 * both of its stored kinds), `registerMethod` adds only what a caller registers, and one gradient
 * method starts and resumes either adapter's runs, each stored under its own kind.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gradientGrpo, resumeGradientGrpo } from '../../lib/grad.js';
import { InvalidInputError, MemoryStore } from '../../lib/index.js';
import { builtinMethods, methodKinds, methodOf, registerMethod } from '../../lib/method.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { digits } from '../../lib/tasks/index.js';
import { bestOfG } from './best-of-g.js';

let policy: OnnxPolicy;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: await bundledModelPath(), hiddenState: true });
});
afterAll(() => policy?.dispose());

const shape = { dataset: digits.dataset({ size: 2, seed: 5 }), rewards: digits.rewards, groupSize: 2, batchSize: 2, maxNewTokens: 2, seed: 5 };

describe('the method registry', () => {
  it('lists the built-in methods, the gradient method under its two stored kinds, then registered ones', () => {
    expect(builtinMethods.map((m) => m.kind)).toEqual(['training-free', 'gradient', 'lora', 'router']);
    // best-of-g.ts registered its method on import, explicitly; nothing else was added.
    expect(methodKinds()).toEqual(['training-free', 'gradient', 'lora', 'router', 'best-of-g']);
    expect(methodOf('best-of-g')?.kind).toBe('best-of-g');
    expect(methodOf('no-such-kind')).toBeUndefined();
  });

  it("refuses a method without hooks, and one that takes a built-in method's kind", () => {
    expect(() => registerMethod({ kind: 'broken' } as unknown as typeof bestOfG)).toThrow(InvalidInputError);
    expect(() => registerMethod({ ...bestOfG, kind: 'router' } as unknown as typeof bestOfG)).toThrow(/built-in method's kind/);
    expect(methodOf('router')).toBe(builtinMethods[3]);
  });
});

describe('one gradient method, two adapters', () => {
  it("stores a head-adapter run as kind 'gradient' and a LoRA run as kind 'lora', and resumes both with resumeGradientGrpo", async () => {
    const store = new MemoryStore();
    for (const [runId, options] of [['head', {}], ['lora', { adapter: 'lora' as const, lora: { r: 2 } }]] as const) {
      const stop = new AbortController();
      const run = gradientGrpo({ ...shape, ...options, epochs: 2, policy, store, runId, signal: stop.signal } as Parameters<typeof gradientGrpo>[0]);
      // Stop after the first of two steps; the resume finishes the second.
      for await (const event of run) if (event.type === 'step-end') stop.abort();
      const stopped = await run.result();
      stopped.trainer.dispose();
      expect(stopped).toMatchObject({ status: 'aborted', stepsCompleted: 1 });
      expect((await store.getRun(runId))?.kind).toBe(runId === 'head' ? 'gradient' : 'lora');
      const resumed = await resumeGradientGrpo(runId, { policy, rewards: digits.rewards, store }).result();
      expect(resumed).toMatchObject({ status: 'completed', stepsCompleted: 2 });
      resumed.trainer.dispose();
    }
  });

  it("refuses an adapter that is neither 'head' nor 'lora', pointing the head adapter's shape to `head`", () => {
    expect(() => gradientGrpo({ ...shape, policy, adapter: { rank: 2 } } as unknown as Parameters<typeof gradientGrpo>[0])).toThrow(/head: \{ rank, scale \}/);
  });
});
