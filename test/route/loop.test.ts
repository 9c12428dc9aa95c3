/**
 * The router loop on a small real policy whose answers depend on the arm: arithmetic questions are
 * answered right mostly when asked to show the work, short questions mostly when sampled hot. The
 * router should learn a different arm per query class, resume to the same state, and survive the
 * stores' export and import.
 */
import 'fake-indexeddb/auto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  exportRun,
  importRun,
  InvalidInputError,
  MemoryStore,
  resumeRouterGrpo,
  resumeTrainingFreeGrpo,
  routerGrpo,
  toJsonl,
  type DatasetItem,
  type GenerateGroupOptions,
  type GroupResult,
  type Policy,
  type RewardFunction,
  type RouterArm,
  type RouterEvent,
  type RouterRun,
  type RunBundle,
} from '../../lib/index.js';
import { mulberry32 } from '../../lib/math.js';
import { payloadOf, validateBundle } from '../../lib/method.js';
import { openIdbStore } from '../../lib/idb.js';
import { openFileStore } from '../../lib/node.js';
import { bundledModelPath, loadOnnxPolicy } from '../../lib/onnx.js';

const SHOW_WORK = 'Show your work.';

/**
 * Says "right" or "wrong", seeded: an arithmetic prompt is right with probability 0.9 when it ends
 * with SHOW_WORK (else 0.2); any other prompt is right with probability 0.9 at temperature >= 1.5
 * (else 0.2).
 */
function armSensitivePolicy(): Policy & { calls: GenerateGroupOptions[] } {
  const calls: GenerateGroupOptions[] = [];
  return {
    info: { model: 'arm-sensitive', backend: 'test' },
    calls,
    async generateGroup(options: GenerateGroupOptions): Promise<GroupResult> {
      calls.push(options);
      const prompt = options.prompt ?? '';
      const math = /\d/.test(prompt);
      const good = math ? prompt.endsWith(SHOW_WORK) : (options.temperature ?? 1) >= 1.5;
      const random = mulberry32(options.seed ?? 0);
      const completions = Array.from({ length: options.groupSize }, () => {
        const text = random() < (good ? 0.9 : 0.2) ? 'right' : 'wrong';
        return { text, tokenIds: [text.length], logprobs: [-0.5], finishReason: 'eos' as const };
      });
      return { promptTokenIds: [1], completions, usage: { promptTokens: options.groupSize, completionTokens: options.groupSize } };
    },
    async dispose() {},
  };
}

const rewards: RewardFunction[] = [{ name: 'right', score: ({ text }) => (text === 'right' ? 1 : 0) }];

const ARMS: RouterArm[] = [
  { id: 'plain', label: 'As asked' },
  { id: 'work', label: 'Show work', instruction: SHOW_WORK },
  { id: 'hot', label: 'Hot', temperatureScale: 2 },
];

const dataset: DatasetItem[] = [
  { prompt: 'What is 2 + 3?' },
  { prompt: 'What is 7 * 6?' },
  { prompt: 'Name a colour.' },
  { prompt: 'Name a fruit.' },
];

const options = (store = new MemoryStore(), runId = 'route') => ({
  policy: armSensitivePolicy(),
  rewards,
  store,
  dataset,
  arms: ARMS,
  groupSize: 6,
  epochs: 8,
  batchSize: 2,
  temperature: 1,
  seed: 7,
  router: { learningRate: 0.2, minSamples: 4 },
  runId,
});

async function collect(run: RouterRun, stop?: (event: RouterEvent) => boolean, controller?: AbortController): Promise<RouterEvent[]> {
  const events: RouterEvent[] = [];
  for await (const event of run) {
    events.push(event);
    if (stop?.(event)) controller?.abort();
  }
  return events;
}

describe('routerGrpo', () => {
  it('learns the better arm per query class', async () => {
    const store = new MemoryStore();
    const run = routerGrpo(options(store));
    const events = await collect(run);
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.stepsCompleted).toBe(16);

    const { math, short } = result.probabilities;
    expect(math.work).toBeGreaterThan(math.plain);
    expect(math.work).toBeGreaterThan(math.hot);
    expect(short.hot).toBeGreaterThan(short.plain);
    expect(short.hot).toBeGreaterThan(short.work);

    // Every step carries the router; every rollout its arm; arms share one call per arm and item.
    const steps = await store.listSteps('route');
    expect(steps.map((s) => payloadOf(s, 'router')?.routing.state.totalUpdates)).toEqual(steps.map((s) => s.step));
    expect(payloadOf(steps.at(-1), 'router')!.routing.probabilities).toEqual(result.probabilities);
    const routed = events.filter((e) => e.type === 'routed');
    const ends = events.filter((e) => e.type === 'item-end');
    expect(ends.map((e) => e.result.rollouts.map((r) => r.arm))).toEqual(routed.map((e) => e.arms));
    const work = ends.flatMap((e) => e.result.rollouts.filter((r) => r.arm === 'work'));
    expect(work.length).toBeGreaterThan(0);

    // Later epochs earn more than the first.
    const meanOf = (from: number, to: number) => {
      const chosen = steps.filter((s) => s.step >= from && s.step <= to);
      return chosen.reduce((n, s) => n + s.stats.meanReward!, 0) / chosen.length;
    };
    expect(meanOf(13, 16)).toBeGreaterThan(meanOf(1, 2));
  });

  it('evaluates the routed policy on its held-out split: each prompt with the arm the router serves its class', async () => {
    const heldOut: DatasetItem[] = [
      ...Array.from({ length: 12 }, (_, i) => ({ prompt: `What is ${i} + ${i + 4}?`, answer: 'right' })),
      ...Array.from({ length: 12 }, (_, i) => ({ prompt: `Name an animal, number ${i}.`.replace(/\d+/, (n) => 'abcdefghijkl'[Number(n)]), answer: 'right' })),
    ];
    const policy = armSensitivePolicy();
    const store = new MemoryStore();
    const run = routerGrpo({ ...options(store, 'routed-eval'), policy, evaluation: { dataset: heldOut, samples: 4, every: 8 } });
    const events = await collect(run);
    const result = await run.result();
    const evals = events.filter((e) => e.type === 'eval');
    expect(evals.map((e) => e.epoch)).toEqual([0, 8]);
    const [before, after] = evals.map((e) => e.evaluation);
    // Before any update every class is served the first arm (the prompt as asked, the run's temperature).
    expect(before.items.every((item) => item.prompt.prompt === heldOut[item.index].prompt)).toBe(true);
    // After: math prompts carry the instruction the router learnt for them, the others were sampled hot.
    expect(result.probabilities.math.work).toBeGreaterThan(0.5);
    expect(result.probabilities.short.hot).toBeGreaterThan(0.5);
    for (const item of after.items) {
      const math = item.index < 12;
      expect(item.prompt.prompt).toBe(math ? `${heldOut[item.index].prompt}\n${SHOW_WORK}` : heldOut[item.index].prompt);
    }
    const evalCalls = policy.calls.filter((call) => heldOut.some((h) => call.prompt?.startsWith(h.prompt!)) && call.groupSize === 4);
    expect(evalCalls.slice(-12).every((call) => call.temperature === 2)).toBe(true);
    // The routed policy's gain is the arms' (0.2 -> 0.9 per sample), well past sampling noise over 96 samples.
    expect(after.summary.accuracy! - before.summary.accuracy!).toBeGreaterThan(0.4);
    await expect(store.listSteps('routed-eval')).resolves.toHaveLength(16);
  });

  it('sends each arm its instruction and temperature, one generateGroup call per arm and item', async () => {
    const policy = armSensitivePolicy();
    const run = routerGrpo({ ...options(), policy, epochs: 1, batchSize: 4 });
    const events = await collect(run);
    const routed = events.filter((e) => e.type === 'routed');
    const expected = routed.reduce((n, e) => n + new Set(e.arms).size, 0);
    expect(policy.calls).toHaveLength(expected);
    for (const call of policy.calls) {
      if (call.prompt!.endsWith(`\n${SHOW_WORK}`)) expect(call.temperature).toBe(1);
      else expect([1, 2]).toContain(call.temperature);
    }
  });

  it('resumes after an abort to the same router as an uninterrupted run', async () => {
    const whole = routerGrpo(options(new MemoryStore(), 'whole'));
    const reference = await whole.result();

    const store = new MemoryStore();
    const controller = new AbortController();
    // Abort in the middle of step 5 (after its first item), so the resume reuses a stored item.
    const first = routerGrpo({ ...options(store, 'resumed'), signal: controller.signal });
    await collect(first, (e) => e.type === 'item-end' && e.step === 5, controller);
    expect((await first.result()).status).toBe('aborted');
    expect((await store.getRun('resumed'))!.status).toBe('aborted');
    expect(await store.getItemResults('resumed', 5)).toHaveLength(1);

    const again = resumeRouterGrpo('resumed', { policy: armSensitivePolicy(), rewards, store });
    const events = await collect(again);
    expect(events[0]).toMatchObject({ type: 'run-start', resumed: true });
    expect(events.find((e) => e.type === 'item-end')).toMatchObject({ step: 5, reused: true });
    const resumed = await again.result();
    expect(resumed.router).toEqual(reference.router);
    expect(resumed.probabilities).toEqual(reference.probabilities);
    // The other loops refuse a router run, and say which loop resumes it.
    await expect(resumeTrainingFreeGrpo('resumed', { policy: armSensitivePolicy(), rewards, store }).result()).rejects.toThrow(/router run; resume it with the resume function of the router method/);
  });

  it('rejects bad arms with InvalidInputError', () => {
    const bad = (arms: unknown) => () => routerGrpo({ ...options(), arms: arms as RouterArm[] });
    expect(bad([{ id: 'a', label: 'A' }])).toThrow(InvalidInputError);
    expect(bad([{ id: 'a', label: 'A' }])).toThrow(/at least two/);
    expect(bad([{ id: 'a', label: 'A' }, { id: 'a', label: 'B' }])).toThrow(/arms\[1\]\.id/);
    expect(bad([{ id: 'a', label: 'A' }, { id: 'b', label: 'B', temperatureScale: 0 }])).toThrow(/temperatureScale/);
    expect(bad([{ id: 'a', label: 'A' }, { id: 'b', label: 'B', temperatureScale: Number.NaN }])).toThrow(InvalidInputError);
    expect(bad([{ id: 'a', label: 'A' }, { id: '', label: 'B' }])).toThrow(InvalidInputError);
    expect(bad('ab')).toThrow(InvalidInputError);
    expect(() => routerGrpo({ ...options(), router: { minSamples: -1 } })).toThrow(InvalidInputError);
  });

  it('keeps the routing through export and import (memory, IndexedDB, files), and exports JSONL', async () => {
    const store = new MemoryStore();
    await routerGrpo({ ...options(store), epochs: 2 }).result();
    const exported = JSON.parse(JSON.stringify(await exportRun(store, 'route')));
    const dir = await mkdtemp(join(tmpdir(), 'webgrpo-router-'));
    const stores = [await openIdbStore({ name: `router-${crypto.randomUUID()}` }), await openFileStore(dir)];
    try {
      for (const target of stores) {
        await importRun(target, exported);
        const back = await exportRun(target, 'route');
        expect(back.run).toEqual(exported.run);
        expect(back.steps).toEqual(exported.steps);
        expect(payloadOf(back.steps.at(-1), 'router')!.routing.state.totalUpdates).toBe(4);
        expect(back.steps[0].items[0].rollouts.every((r) => ARMS.some((a) => a.id === r.arm))).toBe(true);
        // Resume works from the imported copy (the run is complete: nothing left to do).
        const done = await resumeRouterGrpo('route', { policy: armSensitivePolicy(), rewards, store: target }).result();
        expect(done.router).toEqual(payloadOf(back.steps.at(-1), 'router')!.routing.state);
      }
    } finally {
      for (const target of stores) await target.close();
      await rm(dir, { recursive: true, force: true });
    }
    // JSONL: every completion once, under its item's group id, with the prompt its arm sampled from.
    const lines = toJsonl(exported, { include: ['groupId', 'completionId', 'arm'] }).trim().split('\n').map((line) => JSON.parse(line));
    const rollouts = (exported as RunBundle).steps.flatMap((s) => s.items.flatMap((i) => i.rollouts.map((r, row) => ({ ...r, id: `route:${s.step}:${i.index}:${row}`, prompt: i.prompt.prompt }))));
    expect(lines).toHaveLength(rollouts.length);
    for (const r of rollouts) {
      const line = lines.find((l) => l.completion_id === r.id);
      expect(line.group_id).toBe(r.id.split(':').slice(0, 3).join(':'));
      expect(line.prompt).toBe(r.arm === 'work' ? `${r.prompt}\n${SHOW_WORK}` : r.prompt);
      expect(line.arm).toBe(r.arm);
    }
    expect(new Set(lines.map((l) => l.prompt)).size).toBeGreaterThan(dataset.length);

    // Validation is strict about the routing: an unknown arm, a missing state, a payload of another kind.
    const withArm = structuredClone(exported);
    withArm.steps[0].items[0].rollouts[0].arm = 'nope';
    expect(() => validateBundle(withArm)).toThrow(/rollouts\[0\]\.arm/);
    const noRouting = structuredClone(exported);
    delete noRouting.steps[1].payload.routing;
    expect(() => validateBundle(noRouting)).toThrow(/steps\[1\]\.payload\.routing/);
    const badState = structuredClone(exported);
    badState.steps[0].payload.routing.state.weights = 3;
    expect(() => validateBundle(badState)).toThrow(/routing\.state/);
    const otherKind = structuredClone(exported);
    otherKind.steps[0].payload.kind = 'gradient';
    expect(() => validateBundle(otherKind)).toThrow(/steps\[0\]\.payload\.kind/);
    const oneArm = structuredClone(exported);
    oneArm.run.config.arms = oneArm.run.config.arms.slice(0, 1);
    expect(() => validateBundle(oneArm)).toThrow(InvalidInputError);
  });

  it('runs end to end on the bundled ONNX model', async () => {
    const policy = await loadOnnxPolicy({ model: await bundledModelPath() });
    try {
      const store = new MemoryStore();
      const run = routerGrpo({
        policy,
        rewards: [{ name: 'length', score: ({ text }) => Math.min(text.length, 8) / 8 }],
        store,
        dataset: [{ prompt: 'abc' }, { prompt: '1 + 2 =' }],
        arms: [
          { id: 'asked', label: 'As asked' },
          { id: 'terse', label: 'Terse', instruction: 'Answer in as few words as possible.' },
          { id: 'cool', label: 'Cool', temperatureScale: 0.5 },
        ],
        groupSize: 3,
        batchSize: 2,
        maxNewTokens: 4,
        runId: 'onnx',
      });
      const result = await run.result();
      expect(result.status).toBe('completed');
      const steps = await store.listSteps('onnx');
      expect(steps).toHaveLength(1);
      expect(payloadOf(steps[0], 'router')!.routing.stats).toMatchObject({ updated: true, samplesProcessed: 6 });
      expect(steps[0].items.flatMap((i) => i.rollouts.map((r) => r.arm)).every((arm) => arm !== undefined)).toBe(true);
    } finally {
      await policy.dispose();
    }
  });
});
