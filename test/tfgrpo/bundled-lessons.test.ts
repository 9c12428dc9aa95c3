/**
 * The lessons mode offline on the bundled model: the random-weight tiny model (real ONNX runtime,
 * CPU) is both the policy and its own critic, the run is stored in IndexedDB (fake-indexeddb).
 * Its 2048-position context cannot hold the critic's prompts whole once the task is long, so they
 * are cut to fit (markers visible), and the critic decodes under the lessons' and operations'
 * schemas: no critic step is skipped, every reply parses, and every proposed operation is valid
 * and applied, so the library changes (its lessons are gibberish).
 */
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trainingFreeGrpo, type DatasetItem, type GenerateGroupOptions, type Policy, type StepRecord, type TrainingFreeStepPayload } from '../../lib/index.js';
import { validateLibrary } from '../../lib/method.js';
import { openIdbStore } from '../../lib/idb.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';

let model: OnnxPolicy;
beforeAll(async () => {
  model = await loadOnnxPolicy({ model: await bundledModelPath(), device: 'cpu' });
});
afterAll(() => model?.dispose());

/** The model as a critic whose calls are recorded (the prompts it was asked and what it answered). */
function recordedCritic(policy: Policy): Policy & { calls: Array<{ options: GenerateGroupOptions; prompt: number; text: string }> } {
  const calls: Array<{ options: GenerateGroupOptions; prompt: number; text: string }> = [];
  return {
    calls,
    info: policy.info,
    encode: policy.encode!.bind(policy),
    async generateGroup(options) {
      const group = await policy.generateGroup(options);
      calls.push({ options, prompt: group.promptTokenIds.length, text: group.completions[0].text });
      return group;
    },
    dispose: async () => undefined,
  };
}

/** Tasks long enough that a critique prompt (the task, four summaries, the library) overflows the context. */
function longTasks(n: number): DatasetItem[] {
  const filler = 'Read the list and answer with the word that comes first in alphabetical order. ';
  return Array.from({ length: n }, (_, i) => ({ prompt: `${filler.repeat(10)}Words: pear, fig, plum, kiwi ${i}.`, answer: 'fig' }));
}

/** A reward that tells completions apart whatever the model writes: the share of lower-case letters. */
const lowerCase = { name: 'lower-case', score: ({ text }: { text: string }) => (text.length === 0 ? 0 : (text.match(/[a-z]/g)?.length ?? 0) / text.length) };

describe('the lessons mode on the bundled model', () => {
  it('runs end to end: critic prompts cut to fit, no step skipped, every operation valid and applied', async () => {
    expect(model.info.maxPositions).toBe(2048);
    const critic = recordedCritic(model);
    const store = await openIdbStore({ name: `bundled-lessons-${Math.random()}` });
    const dataset = longTasks(4);
    const run = trainingFreeGrpo({
      mode: 'lessons',
      policy: model,
      critic,
      dataset,
      rewards: [lowerCase],
      store,
      groupSize: 4,
      epochs: 2,
      batchSize: 2,
      maxNewTokens: 48,
      criticMaxNewTokens: 192,
      criticTemperature: 1,
      seed: 7,
      runId: 'bundled',
    });
    await run.result();
    const steps = (await store.listSteps('bundled')) as Array<StepRecord<TrainingFreeStepPayload>>;
    expect(steps).toHaveLength(4);

    // No critic step was skipped or repaired, and no group lacked a reward spread.
    const items = steps.flatMap((s) => s.items);
    expect([...steps.flatMap((s) => s.warnings), ...items.flatMap((item) => item.warnings)]).toEqual([]);
    expect(items.map((item) => item.skipped)).toEqual(items.map(() => undefined));
    for (const item of items) {
      expect(item.critique?.outputs).toHaveLength(1);
      expect(item.critique?.parsed?.length).toBeGreaterThan(0);
      expect(item.groupUpdate?.outputs).toHaveLength(1);
      expect(item.groupUpdate?.parsed).toHaveLength(item.critique!.parsed!.length);
    }

    // Every call fit the context; the long ones were cut, with markers, and kept the format request.
    for (const call of critic.calls) expect(call.prompt + call.options.maxNewTokens).toBeLessThanOrEqual(2048);
    const prompts = critic.calls.map((c) => c.options.messages!.at(-1)!.content);
    const cut = prompts.filter((p) => p.includes('more characters cut]'));
    expect(cut.length).toBeGreaterThan(0);
    expect(prompts.filter((p) => p.startsWith('Several attempts')).every((p) => p.endsWith('{"lessons": ["...", ...]}'))).toBe(true);

    // Each step's merge (where a group proposed an edit) parsed, and all it proposed was applied:
    // the library grew by valid operations.
    for (const step of steps) {
      const edits = step.items.flatMap((item) => item.groupUpdate?.parsed ?? []).filter((op) => op.operation !== 'NONE');
      if (edits.length === 0) expect(step.payload.merge).toBeUndefined();
      else expect(step.payload.merge?.parsed?.length).toBeGreaterThan(0);
      expect(step.payload.skippedOperations).toEqual([]);
      expect(step.payload.applied).toHaveLength(step.payload.proposed.length);
    }
    const library = steps.at(-1)!.payload.library;
    expect(() => validateLibrary(library)).not.toThrow();
    expect(library.entries.length).toBeGreaterThan(0);
    await store.close();
  }, 300_000);
});
