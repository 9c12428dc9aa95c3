/**
 * The Training-Free GRPO loop on recorded model outputs: the scripted model (helpers/) is recorded
 * once in `recordReference`, and every run below replays that recording with `replayPolicy`, so
 * runs are deterministic and comparable byte for byte.
 */
import 'fake-indexeddb/auto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AlreadyRunningError,
  InvalidInputError,
  MemoryStore,
  replayPolicy,
  resumeTrainingFreeGrpo,
  StoreError,
  trainingFreeGrpo,
  type Policy,
  type RunBundle,
  type Store,
  type TrainingFreeEvent,
  type TrainingFreeRun,
} from '../../lib/index.js';
import { payloadOf, validateLibrary } from '../../lib/method.js';
import { cleanContent } from '../../lib/experience/operations.js';
import { openIdbStore } from '../../lib/idb.js';
import { openFileStore } from '../../lib/node.js';
import { recordReference, standardShape, timeless, type Reference } from './helpers/fixture.js';
import { scriptedPolicy } from './helpers/scripted-policy.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

let reference: Reference;
beforeAll(async () => {
  reference = await recordReference(standardShape());
});

/** Iterates until `stop(event)` says so, then aborts through the run's signal and drains it. */
async function runUntil(run: TrainingFreeRun, controller: AbortController, stop: (e: TrainingFreeEvent) => boolean): Promise<TrainingFreeEvent[]> {
  const events: TrainingFreeEvent[] = [];
  for await (const event of run) {
    events.push(event);
    if (stop(event)) controller.abort();
  }
  return events;
}

async function drain(run: TrainingFreeRun): Promise<TrainingFreeEvent[]> {
  const events: TrainingFreeEvent[] = [];
  for await (const event of run) events.push(event);
  return events;
}

/** The same run, item for item and operation for operation, as the uninterrupted reference. */
function expectSameRun(bundle: RunBundle, ref: RunBundle) {
  expect(bundle.steps.map(timeless)).toEqual(ref.steps.map(timeless));
  expect(bundle.pending).toEqual([]);
  const seen = bundle.steps.flatMap((s) => s.items.map((i) => `${i.epoch}:${i.index}`));
  expect(new Set(seen).size).toBe(seen.length);
  expect(seen).toHaveLength(ref.run.itemCount * ref.run.config.epochs);
}

const storeKinds: Array<[string, () => Promise<Store>]> = [
  ['memory', async () => new MemoryStore()],
  ['indexeddb (fake-indexeddb)', () => openIdbStore({ name: `loop-${Math.random()}` })],
  [
    'file',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'webgrpo-loop-'));
      dirs.push(dir);
      return openFileStore(dir);
    },
  ],
];

describe('determinism', () => {
  it('replaying the recorded outputs gives the same library, byte for byte, and the same steps', async () => {
    const store = new MemoryStore();
    const run = trainingFreeGrpo({ ...standardShape(), policy: replayPolicy(reference.recording), store, runId: 'replayed' });
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(JSON.stringify(result.library)).toBe(reference.libraryJson);
    expect((await store.readBundle('replayed')).steps.map(timeless)).toEqual(reference.bundle.steps.map(timeless));
    // The recorded run really learned something and really met malformed critic output.
    expect(reference.library.entries.length).toBeGreaterThan(2);
    expect(reference.events.some((e) => e.type === 'warning')).toBe(true);
  });
});

describe('concurrency', () => {
  it('working on three items at once changes nothing in what is learned', async () => {
    const store = new MemoryStore();
    const result = await trainingFreeGrpo({ ...standardShape({ concurrency: 3 }), policy: replayPolicy(reference.recording, { delayMs: 2 }), store, runId: 'c3' }).result();
    expect(JSON.stringify(result.library)).toBe(reference.libraryJson);
    expect((await store.readBundle('c3')).steps.map(timeless)).toEqual(reference.bundle.steps.map(timeless));
  });
});

describe.each(storeKinds)('interrupted and resumed (%s)', (_name, openStore) => {
  it('ends with the same library as the uninterrupted run, with no item done twice or skipped', async () => {
    const store = await openStore();
    const shape = standardShape();
    // 1. Stop mid-step: step 2 has three items; stop after the second has finished.
    const first = new AbortController();
    const run = trainingFreeGrpo({ ...shape, policy: replayPolicy(reference.recording), store, runId: 'r1', signal: first.signal });
    let ended = 0;
    const events = await runUntil(run, first, (e) => e.type === 'item-end' && e.step === 2 && ++ended === 2);
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'aborted', stepsCompleted: 1 });
    expect((await store.getRun('r1'))?.status).toBe('aborted');
    expect((await store.lastStep('r1'))?.step).toBe(1);
    expect((await store.getItemResults('r1', 2)).map((r) => r.position)).toEqual([0, 1]);

    // 2. Resume, and stop again in the middle of step 3 (another epoch).
    const second = new AbortController();
    const resumed = resumeTrainingFreeGrpo('r1', { policy: replayPolicy(reference.recording), rewards: shape.rewards, store, signal: second.signal });
    const events2 = await runUntil(resumed, second, (e) => e.type === 'item-start' && e.step === 3);
    const reused = events2.filter((e) => e.type === 'item-end' && e.reused);
    expect(reused).toHaveLength(2);
    expect(events2[0]).toMatchObject({ type: 'run-start', resumed: true, progress: { itemsDone: 3 } });
    expect((await store.lastStep('r1'))?.step).toBe(2);
    // Warnings of reused items count as if they had just happened.
    const warningsUpToStep2 = reference.events.filter((e) => e.type === 'warning' && e.warning.step <= 2).length;
    expect(events2.at(-1)).toMatchObject({ type: 'run-end', status: 'aborted', warnings: warningsUpToStep2 });

    // 3. Resume to the end.
    const last = resumeTrainingFreeGrpo('r1', { policy: replayPolicy(reference.recording), rewards: shape.rewards, store });
    const events3 = await drain(last);
    const result = await last.result();
    const referenceEnd = reference.events.at(-1);
    expect(result).toMatchObject({ status: 'completed', epochsCompleted: 2, stepsCompleted: 4, itemsProcessed: 12 });
    expect(referenceEnd?.type === 'run-end' && referenceEnd.warnings).toBe(result.warnings);
    expect(JSON.stringify(result.library)).toBe(reference.libraryJson);
    expectSameRun(await store.readBundle('r1'), reference.bundle);
    expect((await store.getRun('r1'))?.status).toBe('completed');
    expect(events3.filter((e) => e.type === 'epoch-end').map((e) => e.type === 'epoch-end' && e.stats)).toEqual(
      reference.events.filter((e) => e.type === 'epoch-end' && e.epoch === 2).map((e) => e.type === 'epoch-end' && e.stats),
    );
    // A completed run resumes to nothing.
    expect((await resumeTrainingFreeGrpo('r1', { policy: replayPolicy(reference.recording), rewards: shape.rewards, store }).result()).status).toBe('completed');
    await store.close();
  });
});

describe('events', () => {
  it('tell a UI everything, in order, with progress for an ETA', () => {
    const types = reference.events.map((e) => e.type);
    expect(types[0]).toBe('run-start');
    expect(types.at(-1)).toBe('run-end');
    expect(types.filter((t) => t === 'step-start')).toHaveLength(4);
    expect(types.filter((t) => t === 'epoch-end')).toHaveLength(2);
    for (const type of ['item-start', 'rollouts', 'rewards', 'advantages', 'summaries', 'critique', 'group-update', 'item-end', 'operations', 'step-end'] as const) {
      expect(types).toContain(type);
    }
    const done = reference.events.flatMap((e) => (e.type === 'item-end' ? [e.progress.itemsDone] : []));
    expect(done).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    const epochEnd = reference.events.find((e) => e.type === 'epoch-end');
    if (epochEnd?.type !== 'epoch-end') throw new Error('no epoch-end');
    expect(epochEnd.stats).toMatchObject({ epoch: 1, steps: 2, groups: 6, rollouts: 24 });
    expect(epochEnd.stats.meanReward).toBeGreaterThan(0);
    expect(epochEnd.stats.zeroSpreadFraction).toBeGreaterThanOrEqual(0);
    expect(epochEnd.stats.librarySize).toBe(epochEnd.library.entries.length);
    const rewards = reference.events.find((e) => e.type === 'rewards');
    if (rewards?.type !== 'rewards') throw new Error('no rewards');
    expect(rewards.rewards[0]).toHaveLength(3);
    const itemEnd = reference.events.find((e) => e.type === 'item-end' && e.result.critique);
    if (itemEnd?.type !== 'item-end') throw new Error('no critiqued item');
    expect(itemEnd.result.rollouts[0].summary).toBeTruthy();
    expect(itemEnd.result.rollouts[0].logprobs.length).toBe(itemEnd.result.rollouts[0].tokenIds.length);
  });
});

describe('untrusted critic output', () => {
  it('never puts anything into the library that a parsed reply did not propose, cleaned', () => {
    for (const step of reference.bundle.steps) {
      const update = payloadOf(step, 'training-free')!;
      expect(() => validateLibrary(update.library)).not.toThrow();
      const fromGroups = step.items.flatMap((i) => i.groupUpdate?.parsed ?? []);
      const sources = update.merge?.parsed ?? fromGroups;
      for (const op of update.proposed) expect(sources).toContainEqual(op);
      for (const applied of update.applied.filter((a) => a.operation !== 'DELETE')) {
        const candidates = update.proposed.map((p) => cleanContent(p.content ?? '', 400).text);
        expect(candidates).toContain(applied.content);
      }
      for (const entry of update.library.entries) {
        expect(entry.text).not.toMatch(/[\r\n]/);
        expect(entry.text.length).toBeLessThanOrEqual(400);
      }
    }
    const stages = new Set(reference.events.flatMap((e) => (e.type === 'warning' ? [e.warning.stage] : [])));
    expect(stages).toContain('critique');
    // A forged "[G99]" line inside a lesson stays inside that one line.
    const rendered = reference.bundle.steps.at(-1)?.items.flatMap((i) => i.prompt.messages?.map((m) => m.content) ?? []) ?? [];
    for (const text of rendered) expect(text).not.toMatch(/^\[G99\]/m);
  });

  it('a critic that only writes garbage leaves the library alone and every skip is recorded', async () => {
    const hostile = await recordReference(standardShape({ initialExperiences: ['Keep the words lowercase.'] }), { hostile: true });
    const start = { nextId: 1, entries: [{ id: 'G0', text: 'Keep the words lowercase.', createdStep: 0, updatedStep: 0 }], exemplars: [] };
    expect(hostile.library).toEqual(start);
    const warnings = hostile.events.flatMap((e) => (e.type === 'warning' ? [e.warning] : []));
    const critiqued = hostile.bundle.steps.flatMap((s) => s.items).filter((i) => !i.skipped);
    expect(critiqued.length).toBeGreaterThan(0);
    expect(warnings.filter((w) => w.stage === 'critique')).toHaveLength(critiqued.length);
    expect(warnings.filter((w) => w.stage === 'summary').length).toBeGreaterThan(0);
    for (const item of critiqued) expect(item.critique?.outputs).toHaveLength(2);
    const end = hostile.events.at(-1);
    expect(end).toMatchObject({ type: 'run-end', status: 'completed', warnings: warnings.length });
  });
});

describe('one loop per run', () => {
  it('refuses a second loop on a running run and a new run on a taken id', async () => {
    const store = new MemoryStore();
    const shape = standardShape();
    const run = trainingFreeGrpo({ ...shape, policy: replayPolicy(reference.recording, { delayMs: 5 }), store, runId: 'busy' });
    const iterator = run[Symbol.asyncIterator]();
    await iterator.next(); // run-start: the run is locked now.
    const second = resumeTrainingFreeGrpo('busy', { policy: replayPolicy(reference.recording), rewards: shape.rewards, store });
    await expect(second.result()).rejects.toBeInstanceOf(AlreadyRunningError);
    await expect(trainingFreeGrpo({ ...shape, policy: scriptedPolicy(), store, runId: 'busy' }).result()).rejects.toBeInstanceOf(StoreError);
    // Leaving the loop (break) stops it and frees the run.
    await iterator.return?.();
    expect((await store.getRun('busy'))?.status).toBe('aborted');
    const result = await resumeTrainingFreeGrpo('busy', { policy: replayPolicy(reference.recording), rewards: shape.rewards, store }).result();
    expect(JSON.stringify(result.library)).toBe(reference.libraryJson);
  });

  it('cancels within one step', async () => {
    const store = new MemoryStore();
    const controller = new AbortController();
    const run = trainingFreeGrpo({
      ...standardShape(),
      policy: replayPolicy(reference.recording, { delayMs: 50 }),
      store,
      runId: 'cancel',
      signal: controller.signal,
    });
    const events = await runUntil(run, controller, (e) => e.type === 'item-start');
    expect(events.map((e) => e.type)).toEqual(['run-start', 'step-start', 'item-start', 'run-end']);
    expect(await store.lastStep('cancel')).toBeUndefined();
    expect(await store.getItemResults('cancel', 1)).toEqual([]);
  });
});

describe('exemplar mode', () => {
  it('keeps the best outputs as few-shot examples, resumably and deterministically', async () => {
    const shape = standardShape({ mode: 'exemplars', epochs: 2 });
    const ref = await recordReference(shape);
    expect(ref.library.exemplars.length).toBeGreaterThan(0);
    expect(ref.library.entries).toEqual([]);
    for (const e of ref.library.exemplars) expect(e.id).toMatch(/^E\d+$/);
    expect(ref.recording.calls.every((c) => c.request.messages?.[0].role !== 'system')).toBe(true);
    const laterPrompts = ref.bundle.steps.at(-1)?.items.map((i) => i.prompt.messages?.at(-1)?.content ?? '') ?? [];
    expect(laterPrompts.some((p) => /^\[E\d+\] Task:/m.test(p))).toBe(true);
    // An item never sees its own exemplar.
    for (const step of ref.bundle.steps) {
      for (const item of step.items) {
        const own = ref.bundle.steps.flatMap((s) => payloadOf(s, 'training-free')!.library.exemplars).filter((e) => item.prompt.messages?.at(-1)?.content.endsWith(e.item));
        for (const e of own) expect(item.experienceIds).not.toContain(e.id);
      }
    }

    const store = new MemoryStore();
    const controller = new AbortController();
    await runUntil(trainingFreeGrpo({ ...shape, policy: replayPolicy(ref.recording), store, runId: 'ex', signal: controller.signal }), controller, (e) => e.type === 'item-end' && e.step === 3);
    const resumed = await resumeTrainingFreeGrpo('ex', { policy: replayPolicy(ref.recording), rewards: shape.rewards, store }).result();
    expect(JSON.stringify(resumed.library)).toBe(ref.libraryJson);
  });
});

describe('retrieval', () => {
  it('shows each prompt only its closest experience, stores the setting and resumes to the same library', async () => {
    const shape = standardShape({ mode: 'exemplars', epochs: 3, retrieveExperiences: 1 });
    const ref = await recordReference(shape);
    expect(ref.bundle.run.config).toMatchObject({ retrieveExperiences: 1 });
    expect(ref.library.exemplars.length).toBeGreaterThan(1);
    const items = ref.bundle.steps.flatMap((s) => s.items);
    for (const item of items) expect(item.experienceIds.length).toBeLessThanOrEqual(1);
    expect(items.some((item) => item.experienceIds.length === 1)).toBe(true);

    const store = new MemoryStore();
    const controller = new AbortController();
    await runUntil(trainingFreeGrpo({ ...shape, policy: replayPolicy(ref.recording), store, runId: 'near', signal: controller.signal }), controller, (e) => e.type === 'item-end' && e.step === 2);
    const resumed = await resumeTrainingFreeGrpo('near', { policy: replayPolicy(ref.recording), rewards: shape.rewards, store }).result();
    expect(JSON.stringify(resumed.library)).toBe(ref.libraryJson);
  });
});

describe('options and rewards', () => {
  it('validates options up front with errors that name the option', () => {
    const base = { ...standardShape(), policy: scriptedPolicy() };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ groupSize: 1 }, 'groupSize'],
      [{ epochs: 0 }, 'epochs'],
      [{ temperature: -1 }, 'temperature'],
      [{ dataset: [] }, 'dataset'],
      [{ dataset: [{ prompt: 'a', messages: [{ role: 'user', content: 'b' }] }] }, 'dataset[0]'],
      [{ rewards: [] }, 'rewards'],
      [{ rewards: [{ name: 'x', score: () => 1 }, { name: 'x', score: () => 1 }] }, 'rewards[1].name'],
      [{ templates: { prompt: 'no placeholders' } }, 'templates.prompt'],
      [{ mode: 'weights' }, 'mode'],
      [{ runId: '../x' }, 'runId'],
      [{ initialExperiences: 7 }, 'initialExperiences'],
      [{ retrieveExperiences: -1 }, 'retrieveExperiences'],
      [{ retrieveExperiences: 1.5 }, 'retrieveExperiences'],
    ];
    for (const [override, argument] of cases) {
      try {
        trainingFreeGrpo({ ...base, ...override } as never);
        throw new Error(`expected ${argument} to be rejected`);
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidInputError);
        expect((error as InvalidInputError).argument).toBe(argument);
      }
    }
  });

  it('fails clearly on a reward that returns NaN, and the run stays resumable', async () => {
    const store = new MemoryStore();
    const shape = standardShape();
    const broken = [...shape.rewards.slice(0, 2), { name: 'similarity', weight: 0.5, score: () => NaN }];
    const run = trainingFreeGrpo({ ...shape, rewards: broken, policy: replayPolicy(reference.recording), store, runId: 'nan' });
    const error = await run.result().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).argument).toBe('rewards.similarity');
    expect(await store.getRun('nan')).toMatchObject({ status: 'failed' });
    await expect(resumeTrainingFreeGrpo('nan', { policy: replayPolicy(reference.recording), rewards: shape.rewards.slice(0, 2), store }).result()).rejects.toThrow(/missing: similarity/);
    const fixed = await resumeTrainingFreeGrpo('nan', { policy: replayPolicy(reference.recording), rewards: shape.rewards, store }).result();
    expect(JSON.stringify(fixed.library)).toBe(reference.libraryJson);
  });

  it('treats null as "cannot score": groups nobody can score are not critiqued', async () => {
    const unscorable = { name: 'judge', score: () => null };
    const ref = await recordReference(standardShape({ rewards: [unscorable], epochs: 1 }));
    const items = ref.bundle.steps.flatMap((s) => s.items);
    expect(items.every((i) => i.skipped === 'no-rewards' && i.rollouts.every((r) => r.reward === null && r.advantage === 0))).toBe(true);
    expect(ref.recording.calls.every((c) => c.request.messages?.[0].role !== 'system')).toBe(true);
  });

  it('without ground truth hides answers and rewards from the critic and skips no group', async () => {
    const critic = scriptedPolicy();
    const seen: string[] = [];
    const spy: Policy = { ...critic, generateGroup: async (o) => (seen.push(o.messages?.at(-1)?.content ?? ''), critic.generateGroup(o)) };
    const policy = scriptedPolicy();
    const run = trainingFreeGrpo({ ...standardShape({ epochs: 1, givenGroundTruth: false }), policy, critic: spy });
    const events = await drain(run);
    expect(events.filter((e) => e.type === 'item-end' && e.result.skipped)).toEqual([]);
    const critiques = seen.filter((s) => s.includes('Propose at most'));
    expect(critiques).toHaveLength(6);
    for (const prompt of critiques) {
      expect(prompt).toContain('Reference answer: (not given)');
      expect(prompt).toMatch(/Attempt 1 \(reward \(not given\)\)/);
    }
  });

  it("counts experience tokens with the policy's tokenizer when it has one", async () => {
    const inner = scriptedPolicy();
    // A tokenizer for which every lesson is huge: nothing fits a 50-token budget.
    const policy: Policy = { ...inner, encode: async (text) => Array.from({ length: text.length * 10 }, () => 1) };
    const run = trainingFreeGrpo({ ...standardShape({ initialExperiences: ['Sort by first letter.'], experienceTokenBudget: 50, epochs: 1, batchSize: 6 }), policy });
    const starts = (await drain(run)).filter((e) => e.type === 'item-start');
    expect(starts.every((e) => e.type === 'item-start' && e.experienceIds.length === 0)).toBe(true);
    const generous = trainingFreeGrpo({ ...standardShape({ initialExperiences: ['Sort by first letter.'], experienceTokenBudget: 50, epochs: 1, batchSize: 6 }), policy: inner });
    const starts2 = (await drain(generous)).filter((e) => e.type === 'item-start');
    expect(starts2.every((e) => e.type === 'item-start' && e.experienceIds.includes('G0'))).toBe(true);
  });
});

describe('an already aborted signal', () => {
  it('ends the run at once as aborted, with nothing done', async () => {
    const store = new MemoryStore();
    const controller = new AbortController();
    controller.abort();
    const run = trainingFreeGrpo({ ...standardShape(), policy: replayPolicy(reference.recording), store, runId: 'pre', signal: controller.signal });
    const events = await drain(run);
    expect(events.map((e) => e.type)).toEqual(['run-end']);
    expect(await run.result()).toMatchObject({ status: 'aborted', stepsCompleted: 0, itemsProcessed: 0 });
    expect((await store.getRun('pre'))?.status).toBe('aborted');
  });
});
