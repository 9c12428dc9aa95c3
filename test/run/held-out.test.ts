/**
 * A loop's held-out evaluation on the bundled ONNX model, kept in IndexedDB (fake-indexeddb): the
 * run evaluates before its first step and after each due epoch, emits `eval` events, keeps every
 * evaluation with the run; it trains exactly as without an evaluation (the evaluation draws from
 * its own seeds); a run stopped between an epoch's commit and its evaluation evaluates first when
 * resumed and ends as the uninterrupted run; exports carry the evaluations; a Training-Free run's
 * held-out prompts carry its library; a method that samples from a policy of its own is evaluated on it.
 */
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gradientGrpo, resumeGradientGrpo, type GradientResult } from '../../lib/grad.js';
import { openIdbStore } from '../../lib/idb.js';
import {
  evaluate,
  exportRun,
  importRun,
  InvalidInputError,
  MemoryStore,
  promptWithLibrary,
  trainingFreeGrpo,
  type EvaluationRecord,
  type GenerateGroupOptions,
  type LoopEvaluationOptions,
  type Policy,
  type Store,
  type TrainingFreeRunRecord,
} from '../../lib/index.js';
import { digits } from '../../lib/tasks/index.js';
import { startRun, validateBundle } from '../../lib/method.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { bestOfG, countingPolicy, lengthReward } from './best-of-g.js';

let onnx: OnnxPolicy;
beforeAll(async () => {
  onnx = await loadOnnxPolicy({ model: await bundledModelPath(), hiddenState: true });
}, 120_000);
afterAll(async () => {
  await onnx?.dispose();
});

const heldOut = digits.dataset({ size: 3, seed: 901 });
// The digits task has no reference answers: a sample is correct when most of its characters are digits.
const evaluation: LoopEvaluationOptions = { dataset: heldOut, samples: 2, maxNewTokens: 4, correct: { reward: 'digit_share', atLeast: 0.5 } };

function start(store: Store, runId: string, options: { evaluation?: LoopEvaluationOptions; signal?: AbortSignal } = {}) {
  return gradientGrpo({
    policy: onnx,
    dataset: digits.dataset({ size: 4, seed: 2 }),
    rewards: digits.rewards,
    groupSize: 4,
    batchSize: 2,
    epochs: 2,
    maxNewTokens: 4,
    head: { rank: 2 },
    store,
    runId,
    ...options,
  });
}

type Event = { type: string; epoch?: number; evaluation?: EvaluationRecord; progress?: { step: number } };

async function drain(run: AsyncIterable<Event>, stop?: (e: Event) => boolean, controller?: AbortController): Promise<Event[]> {
  const events: Event[] = [];
  for await (const event of run) {
    events.push(event);
    if (stop?.(event)) controller?.abort();
  }
  return events;
}

/** An event as the order checks name it: evaluations and epoch ends with their epoch. */
const label = (e: Event) => (e.type === 'eval' || e.type === 'epoch-end' ? `${e.type}${e.epoch}` : e.type);
const adapterOf = (r: GradientResult) => JSON.stringify({ a: r.adapter.a, b: r.adapter.b, updates: r.adapter.updates });
const withoutTimes = (records: EvaluationRecord[] | undefined) => records?.map(({ evaluatedAt: _at, ...rest }) => rest);
async function stepsOf(store: Store, runId: string) {
  return (await store.listSteps(runId)).map(({ committedAt: _at, ...rest }) => rest);
}

describe('a gradient run with a held-out split', () => {
  let store: Store;
  let events: Event[];
  let reference: GradientResult;
  beforeAll(async () => {
    store = await openIdbStore({ name: 'held-out-reference' });
    const run = start(store, 'reference', { evaluation });
    events = await drain(run);
    reference = await run.result();
  }, 180_000);
  afterAll(async () => {
    reference?.trainer.dispose();
    await store?.close();
  });

  it('evaluates before the first step and after each epoch, announcing each with an eval event', async () => {
    const order = events.filter((e) => ['eval', 'epoch-end', 'step-start', 'run-end'].includes(e.type)).map(label);
    expect(order).toEqual(['eval0', 'step-start', 'step-start', 'epoch-end1', 'eval1', 'step-start', 'step-start', 'epoch-end2', 'eval2', 'run-end']);
    const announced = events.filter((e) => e.type === 'eval').map((e) => e.evaluation!);
    expect(announced.map((e) => [e.epoch, e.step])).toEqual([[0, 0], [1, 2], [2, 4]]);
    // Progress never runs backwards: before the first step the run stands at step 1, as run-start says.
    const steps = events.filter((e) => e.type === 'run-start' || e.type === 'eval' || e.type === 'epoch-end').map((e) => e.progress?.step);
    expect(steps).toEqual([1, 1, 2, 2, 4, 4]);
    for (const record of announced) {
      expect(record.summary).toMatchObject({ items: 3, samples: 2, judged: 3, rewardNames: digits.rewards.map((r) => r.name) });
      for (const item of record.items) for (const sample of item.samples) expect(sample.correct).toBe((sample.rewards[0] as number) >= 0.5);
      expect(record.items.map((i) => i.prompt)).toEqual(heldOut.map((item) => ({ messages: item.messages })));
    }
    const kept = await store.getRun('reference');
    expect(kept?.evaluations).toEqual(announced);
    // The last one is evaluate() of the policy with the trained adapter still attached, from the run's evaluation seed.
    const config = kept!.config.evaluation!;
    const direct = await evaluate({ policy: onnx, dataset: heldOut, rewards: digits.rewards, samples: 2, maxNewTokens: 4, seed: config.seed, correct: config.correct });
    expect(direct.items).toEqual(announced[2].items);
    expect(direct.items).not.toEqual(announced[0].items);
    expect(kept?.config.evaluation).toMatchObject({ every: 1, samples: 2, temperature: 1, maxNewTokens: 4, correct: { reward: 'digit_share', atLeast: 0.5 }, items: heldOut });
  });

  it('trains exactly as the same run without an evaluation', async () => {
    const plain = new MemoryStore();
    const result = await start(plain, 'plain').result();
    expect(adapterOf(result)).toBe(adapterOf(reference));
    expect(await stepsOf(plain, 'plain')).toEqual(await stepsOf(store, 'reference'));
    expect((await plain.getRun('plain'))?.evaluations).toBeUndefined();
    result.trainer.dispose();
  }, 180_000);

  it('stopped before an epoch evaluation was kept, evaluates it first on resume and ends as the uninterrupted run', async () => {
    const name = 'held-out-stopped';
    const first = await openIdbStore({ name });
    const controller = new AbortController();
    const run = start(first, 'stopped', { evaluation, signal: controller.signal });
    await drain(run, (e) => e.type === 'epoch-end' && e.epoch === 1, controller);
    const stopped = await run.result();
    expect(stopped).toMatchObject({ status: 'aborted', stepsCompleted: 2 });
    stopped.trainer.dispose();
    expect((await first.getRun('stopped'))?.evaluations?.map((e) => e.epoch)).toEqual([0]);
    await first.close();

    const again = await openIdbStore({ name });
    const resumed = resumeGradientGrpo('stopped', { policy: onnx, rewards: digits.rewards, store: again });
    const order = (await drain(resumed)).filter((e) => e.type === 'eval' || e.type === 'step-start').map(label);
    expect(order).toEqual(['eval1', 'step-start', 'step-start', 'eval2']);
    const result = await resumed.result();
    expect(adapterOf(result)).toBe(adapterOf(reference));
    expect(withoutTimes((await again.getRun('stopped'))?.evaluations)).toEqual(withoutTimes((await store.getRun('reference'))?.evaluations));
    result.trainer.dispose();
    await again.close();
  }, 180_000);

  it('keeps its evaluations through export and import, and imports check them', async () => {
    const exported = await exportRun(store, 'reference');
    const target = new MemoryStore();
    await importRun(target, JSON.stringify(exported), { runId: 'copy' });
    expect((await target.getRun('copy'))?.evaluations).toEqual((await store.getRun('reference'))?.evaluations);
    const broken = structuredClone(exported);
    broken.run.evaluations![1].items[0].samples[0].reward = 'high' as unknown as number;
    expect(() => validateBundle(broken)).toThrow(/run\.run\.evaluations\[1\]\.items\[0\]\.samples\[0\]\.reward: expected a finite number/);
  });
});

describe('a training-free run with a held-out split', () => {
  it("puts the library into the held-out prompts as into the training items'", async () => {
    const store = new MemoryStore();
    const run = trainingFreeGrpo({
      policy: onnx,
      dataset: digits.dataset({ size: 2, seed: 3 }),
      rewards: digits.rewards,
      mode: 'exemplars',
      groupSize: 2,
      batchSize: 2,
      epochs: 1,
      maxNewTokens: 4,
      initialExperiences: ['Answer with digits only.'],
      evaluation: { dataset: heldOut, temperature: 0 },
      store,
      runId: 'tf',
    });
    const events = (await drain(run as AsyncIterable<Event>)) as Array<Event & { prompt?: unknown; library?: never }>;
    const result = await run.result();
    const [before, after] = events.filter((e) => e.type === 'eval').map((e) => e.evaluation!);
    expect(before.summary).toMatchObject({ greedy: true, samples: 1 });
    const start = (await store.getRun('tf')) as TrainingFreeRunRecord;
    for (const item of before.items) {
      expect(item.prompt).toEqual(promptWithLibrary({ messages: heldOut[item.index].messages }, start.initialLibrary, { template: start.config.templates.prompt }).prompt);
      expect(JSON.stringify(item.prompt)).toContain('Answer with digits only.');
    }
    for (const item of after.items) {
      expect(item.prompt).toEqual(promptWithLibrary({ messages: heldOut[item.index].messages }, result.library, { template: start.config.templates.prompt }).prompt);
    }
  }, 120_000);

  it('checks the evaluation options when the run starts', () => {
    const base = { policy: onnx, dataset: digits.dataset({ size: 2 }), rewards: digits.rewards };
    expect(() => trainingFreeGrpo({ ...base, evaluation: { dataset: [] } })).toThrow(/evaluation\.dataset: is empty/);
    expect(() => trainingFreeGrpo({ ...base, evaluation: { dataset: heldOut, every: 0 } })).toThrow(/evaluation\.every: expected an integer from 1/);
    expect(() => trainingFreeGrpo({ ...base, evaluation: { dataset: heldOut, samples: 3, temperature: 0 } })).toThrow(/greedy decoding/);
    expect(() => trainingFreeGrpo({ ...base, evaluation: { dataset: heldOut, correct: { reward: 'nope' } } })).toThrow(InvalidInputError);
    expect(() => trainingFreeGrpo({ ...base, evaluation: { dataset: heldOut, temperature: 0, alsoGreedy: true } })).toThrow(/evaluation\.alsoGreedy: is true, but the evaluation is greedy already/);
  });

  it('with alsoGreedy, keeps a greedy pass of the same items next to each sampled one, through export and import', async () => {
    const greedyStore = new MemoryStore();
    const run = start(greedyStore, 'greedy-too', { evaluation: { ...evaluation, alsoGreedy: true } });
    const evals = (await drain(run)).filter((e) => e.type === 'eval').map((e) => e.evaluation!);
    (await run.result()).trainer.dispose();
    expect(evals).toHaveLength(3);
    // The sampled pass is the run's without the option, draw for draw.
    const plain = start(new MemoryStore(), 'sampled-only', { evaluation });
    const sampledOnly = (await drain(plain)).filter((e) => e.type === 'eval').map((e) => e.evaluation!);
    (await plain.result()).trainer.dispose();
    expect(evals.map(({ evaluatedAt: _at, greedyPass: _g, ...rest }) => rest)).toEqual(withoutTimes(sampledOnly));
    for (const record of evals) {
      expect(record.greedyPass!.summary).toMatchObject({ greedy: true, samples: 1, temperature: 0, items: heldOut.length });
    }
    // Before the first step the greedy pass is the base model's greedy evaluation.
    const base = await evaluate({ policy: onnx, dataset: heldOut, rewards: digits.rewards, temperature: 0, maxNewTokens: 4, correct: { reward: 'digit_share', atLeast: 0.5 } });
    expect(evals[0].greedyPass!.items.map((i) => i.samples[0].text)).toEqual(base.items.map((i) => i.samples[0].text));
    const imported = new MemoryStore();
    await importRun(imported, await exportRun(greedyStore, 'greedy-too'));
    expect((await imported.getRun('greedy-too'))!.evaluations!.map((e) => e.greedyPass!.summary.accuracy)).toEqual(evals.map((e) => e.greedyPass!.summary.accuracy));
  }, 120_000);
});

describe('a method that samples from a policy of its own', () => {
  it('is evaluated on the policy it names', async () => {
    // Stands for a model with the method's updates merged in: it answers differently from the run's policy.
    const own: Policy = {
      info: { model: 'merged', backend: 'test' },
      async generateGroup(o: GenerateGroupOptions) {
        const completions = Array.from({ length: o.groupSize }, () => ({ text: 'zzz', tokenIds: [1, 1, 1], logprobs: [-1, -1, -1], finishReason: 'eos' as const }));
        return { promptTokenIds: [1], completions, usage: { promptTokens: 1, completionTokens: 3 * o.groupSize } };
      },
      async dispose() {},
    };
    // The same method under another kind, whose drive names another policy for the held-out evaluation.
    const method = {
      ...bestOfG,
      kind: 'best-of-g-merged',
      record: { ...bestOfG.record, kind: 'best-of-g-merged' },
      open: async (ctx: Parameters<typeof bestOfG.open>[0]) => ({ ...(await bestOfG.open(ctx)), heldOut: { policy: own } }),
    } as unknown as typeof bestOfG;
    const dataset = [{ prompt: 'one' }, { prompt: 'two' }];
    const store = new MemoryStore();
    const options = { policy: countingPolicy(), rewards: [lengthReward], dataset, groupSize: 2, batchSize: 2, runId: 'merged', store, evaluation: { dataset: [{ prompt: 'held out' }], correct: { reward: 'length', atLeast: 3 } } };
    await startRun(method, options).result();
    const kept = (await store.getRun('merged'))!.evaluations!;
    expect(kept.map((e) => e.items[0].samples[0].text)).toEqual(['zzz', 'zzz']);
    // The training groups were the run's policy's ('a' repeated).
    expect((await store.listSteps('merged'))[0].items[0].rollouts.every((r) => /^a+$/.test(r.text))).toBe(true);
  });
});
