/**
 * The setup form's memory note for LoRA on hub models: the library's plan under what a tab holds
 * (less the model's files the page keeps) says whether the run holds the sampler and the step
 * together or takes turns; a setting past both names smaller settings that do fit, each of which
 * really does by the same plan and in the mode named; and Start hands the run that budget with
 * takeTurns 'auto', so the library makes the choice the page showed.
 */
import { describe, expect, it } from 'vitest';
import { builtinTasks } from '../../lib/tasks.js';
import { planRunMemory } from '../../lib/train/memory-plan.js';
import { choiceOf } from '../../site/lib/methods.js';
import { INITIAL_SETUP } from '../../site/lib/setup.js';
import { runMemoryOptions, stepMemoryNote, TAB_BYTES } from '../../site/lib/step-memory.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';

describe('stepMemoryNote', () => {
  it('is only for LoRA on the hub models', () => {
    expect(stepMemoryNote('skill', 'lora', { groupSize: 8, batchSize: 2, maxNewTokens: 64 })).toBeUndefined();
    expect(stepMemoryNote('smollm2-135m', 'gradient', { groupSize: 8, batchSize: 2, maxNewTokens: 64 })).toBeUndefined();
  });

  it('fits a small step of SmolLM2-135M and says how much it takes', () => {
    const note = stepMemoryNote('smollm2-135m', 'lora', { groupSize: 8, batchSize: 1, maxNewTokens: 64 })!;
    expect(note.fits).toBe(true);
    expect(note.mode).toBe('together');
    expect(note.bytes).toBeLessThan(TAB_BYTES);
    expect(note.text).toMatch(/about \d\.\d GB/);
  });

  it('says the run takes turns where only that fits the tab: Qwen2.5-0.5B, 8 x 256, four prompts a step', () => {
    const settings = { groupSize: 8, batchSize: 4, maxNewTokens: 256 };
    const note = stepMemoryNote('qwen2.5-0.5b', 'lora', settings)!;
    expect(note).toMatchObject({ fits: true, mode: 'turns' });
    expect(note.bytes).toBeLessThanOrEqual(TAB_BYTES);
    expect(note.text).toMatch(/together would need about (\d\.\d) GB, more than a tab can hold \(4\.0 GB\), so the run takes turns: .* about \d\.\d GB\.$/);
    expect(Number(/together would need about (\d\.\d) GB/.exec(note.text)![1])).toBeGreaterThan(4);
    // The budget Start hands the run gives the library the same choice.
    const { memoryBudget } = runMemoryOptions('qwen2.5-0.5b') as { memoryBudget: number };
    const shape = { vocabSize: 151936, hiddenSize: 896, intermediateSize: 4864, numLayers: 24, numHeads: 14, numKvHeads: 2, headDim: 64, ropeTheta: 1000000, rmsNormEps: 1e-6 };
    expect(planRunMemory(shape, { prompts: 4, groupSize: 8, promptTokens: 96, completionTokens: 256, dtype: 'q4' }, memoryBudget, 'auto').mode).toBe('turns');
    expect(runMemoryOptions('skill')).toEqual({});
  });

  it('hands a LoRA run on a hub model the tab as its memoryBudget with takeTurns auto, and none for the bundled models', async () => {
    const task = builtinTasks[INITIAL_SETUP.task];
    const started = (modelId: string) => {
      let request: { settings: Record<string, unknown> } | undefined;
      let fail = () => {};
      const worker = {
        postMessage: (message: { request: typeof request; port: MessagePort }) => {
          request = message.request;
          message.port.close();
        },
        addEventListener: (_: 'error', listener: () => void) => void (fail = listener),
        removeEventListener: () => {},
      } as unknown as Worker;
      const controller = new AbortController();
      const run = choiceOf('lora').start({ policy: createToyPolicy(), trainer: worker, store: undefined as never, signal: controller.signal, rewards: task.rewards, task: task.name, onStream: () => {}, dataset: task.dataset({ size: 2, seed: 1 }), setup: { ...INITIAL_SETUP, method: 'lora' }, modelId });
      const next = run[Symbol.asyncIterator]().next();
      fail();
      controller.abort();
      return next.then(
        () => request,
        () => request,
      );
    };
    expect((await started('smollm2-135m'))!.settings).toMatchObject({ memoryBudget: (runMemoryOptions('smollm2-135m') as { memoryBudget: number }).memoryBudget, takeTurns: 'auto' });
    expect((await started('skill'))!.settings).not.toHaveProperty('memoryBudget');
    expect((await started('skill'))!.settings).not.toHaveProperty('takeTurns');
  });

  it('refuses a step past the tab and names a smaller setting that fits, in the mode it fits in', () => {
    // The step runs part by part, so more completions or prompts add no part: only replies this long do not fit.
    const settings = { groupSize: 16, batchSize: 16, maxNewTokens: 4096 };
    const note = stepMemoryNote('qwen2.5-0.5b', 'lora', settings)!;
    expect(note.fits).toBe(false);
    expect(note.bytes).toBeGreaterThan(TAB_BYTES);
    expect(note.text).toMatch(/with the sampler beside it and \d+\.\d GB taking turns, more than a tab can hold/);
    expect(note.text).not.toMatch(/groups of|prompts? a step/);
    const replies = /replies of at most (\d+) tokens \(taking turns\)/.exec(note.text);
    expect(replies).not.toBeNull();
    expect(stepMemoryNote('qwen2.5-0.5b', 'lora', { ...settings, maxNewTokens: Number(replies![1]) })).toMatchObject({ fits: true, mode: 'turns' });
    expect(stepMemoryNote('qwen2.5-0.5b', 'lora', { ...settings, maxNewTokens: Number(replies![1]) + 1 })!.fits).toBe(false);
  });
});
