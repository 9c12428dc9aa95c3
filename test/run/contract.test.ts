/**
 * What the driver promises, for every method (the built-in ones and a best-of-G method defined
 * only in the tests): a run stopped mid-step and resumed ends where an uninterrupted one does; a
 * second loop on a running run gets `AlreadyRunningError`; a cancel ends the run within one step
 * with nothing half-written; `onEpoch` gets every group of each epoch and `epoch-end` announces
 * it; items run concurrently where the method allows it; runs export and import, and resume after
 * the import.
 */
import 'fake-indexeddb/auto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gradientGrpo, loraGrpo, resumeGradientGrpo, resumeLoraGrpo, type LoraPolicy } from '../../lib/grad.js';
import { openIdbStore } from '../../lib/idb.js';
import {
  AlreadyRunningError,
  exportRun,
  importRun,
  MemoryStore,
  replayPolicy,
  resumeRouterGrpo,
  resumeTrainingFreeGrpo,
  routerGrpo,
  runGroups,
  trainingFreeGrpo,
  type EpochExport,
  type GenerateGroupOptions,
  type LoopHandles,
  type Policy,
  type PolicyRecording,
  type Run,
  type Store,
} from '../../lib/index.js';
import { alphabetise, digits } from '../../lib/tasks/index.js';
import { openFileStore } from '../../lib/node.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { recordReference, standardShape } from '../tfgrpo/helpers/fixture.js';
import { bestOfGRun, countingPolicy, lengthReward, resumeBestOfG } from './best-of-g.js';
import { armPolicy } from '../fixtures/v5/runs.js';

type AnyRun = Run<{ type: string; [key: string]: unknown }, { status: string; stepsCompleted: number }>;

interface Case {
  name: string;
  /** Epochs and items of the standard run (every case has 2 epochs of 2 steps). */
  epochs: number;
  items: number;
  /** Whether the method works items of a step concurrently when asked to. */
  concurrent: boolean;
  start(o: { store: Store; runId: string; signal?: AbortSignal; onEpoch?: (e: EpochExport) => Promise<void>; delayMs?: number; concurrency?: number }): AnyRun;
  resume(runId: string, store: Store): AnyRun;
  /** What must be equal between an uninterrupted run and a resumed one. */
  fingerprint(result: unknown): string;
  /** Frees what a result holds. */
  dispose(result: unknown): void;
}

let onnx: OnnxPolicy;
/** The LoRA runs' policy: its weights are replaced as the adapter trains, so it is not the gradient runs'. */
let loraOnnx: OnnxPolicy;
let recording: PolicyRecording;
const dirs: string[] = [];
beforeAll(async () => {
  onnx = await loadOnnxPolicy({ model: await bundledModelPath(), hiddenState: true });
  loraOnnx = await loadOnnxPolicy({ model: await bundledModelPath() });
  recording = (await recordReference(standardShape({ batchSize: 2, dataset: alphabetise.dataset({ size: 4, seed: 1 }) }))).recording;
  const exemplars = await recordReference(standardShape({ batchSize: 2, dataset: alphabetise.dataset({ size: 4, seed: 1 }), mode: 'exemplars' }));
  recording = { ...recording, calls: [...recording.calls, ...exemplars.recording.calls] };
}, 120_000);
afterAll(async () => {
  await onnx?.dispose();
  await loraOnnx?.dispose();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A policy that waits before every call (so a test can act while a run is inside a step). */
function slow<P extends Policy>(policy: P, delayMs: number | undefined): P {
  if (!delayMs) return policy;
  return { ...policy, generateGroup: async (o: GenerateGroupOptions) => (await new Promise((r) => setTimeout(r, delayMs)), policy.generateGroup(o)) };
}

/** `slow` for the LoRA runs' policy, keeping the methods that swap its weights. */
function slowLora(policy: OnnxPolicy, delayMs: number | undefined): LoraPolicy {
  if (!delayMs) return policy;
  return {
    info: policy.info,
    generateGroup: async (o: GenerateGroupOptions) => (await new Promise((r) => setTimeout(r, delayMs)), policy.generateGroup(o)),
    modelGraph: () => policy.modelGraph(),
    replaceGraph: (graph) => policy.replaceGraph(graph),
    // With it the default engine is the unwrapped policy's (onnxruntime's kernels), so runs compare.
    followAdapter: (adapter) => policy.followAdapter(adapter),
    promptIds: (input) => policy.promptIds(input),
    dispose: async () => undefined,
  };
}

const tf = (mode: 'lessons' | 'exemplars'): Case => ({
  name: mode,
  epochs: 2,
  items: 4,
  concurrent: true,
  start: (o) =>
    trainingFreeGrpo({
      ...standardShape({ batchSize: 2, dataset: alphabetise.dataset({ size: 4, seed: 1 }), mode, concurrency: o.concurrency ?? 1 }),
      policy: slow(replayPolicy(recording), o.delayMs),
      store: o.store,
      runId: o.runId,
      signal: o.signal,
      onEpoch: o.onEpoch,
    }) as unknown as AnyRun,
  resume: (runId, store) => resumeTrainingFreeGrpo(runId, { policy: replayPolicy(recording), rewards: alphabetise.rewards, store }) as unknown as AnyRun,
  fingerprint: (r) => JSON.stringify((r as { library: unknown }).library),
  dispose: () => undefined,
});

const arms = [
  { id: 'plain', label: 'Plain' },
  { id: 'work', label: 'Show work', instruction: 'Show your work.' },
];
const right = { name: 'right', score: ({ text }: { text: string }) => (text === 'right' ? 1 : 0) };
const routerData = [{ prompt: '1+1' }, { prompt: '2+2' }, { prompt: 'a colour' }, { prompt: 'a fruit' }];

const cases: Case[] = [
  tf('lessons'),
  tf('exemplars'),
  {
    name: 'gradient',
    epochs: 2,
    items: 4,
    concurrent: false,
    start: (o) =>
      gradientGrpo({
        policy: slow(onnx, o.delayMs),
        dataset: digits.dataset({ size: 4, seed: 2 }),
        rewards: digits.rewards,
        groupSize: 4,
        batchSize: 2,
        epochs: 2,
        maxNewTokens: 4,
        head: { rank: 2 },
        store: o.store,
        runId: o.runId,
        signal: o.signal,
        onEpoch: o.onEpoch,
      }) as unknown as AnyRun,
    resume: (runId, store) => resumeGradientGrpo(runId, { policy: onnx, rewards: digits.rewards, store }) as unknown as AnyRun,
    fingerprint: (r) => {
      const { a, b, updates } = (r as { adapter: { a: string; b: string; updates: number } }).adapter;
      return JSON.stringify({ a, b, updates });
    },
    dispose: (r) => (r as { trainer: { dispose(): void } }).trainer.dispose(),
  },
  {
    name: 'lora',
    epochs: 2,
    items: 4,
    concurrent: false,
    start: (o) =>
      loraGrpo({
        policy: slowLora(loraOnnx, o.delayMs),
        dataset: digits.dataset({ size: 4, seed: 2 }),
        rewards: digits.rewards,
        groupSize: 4,
        batchSize: 2,
        epochs: 2,
        maxNewTokens: 4,
        lora: { r: 2, alpha: 4 },
        optimizer: { lr: 0.01 },
        store: o.store,
        runId: o.runId,
        signal: o.signal,
        onEpoch: o.onEpoch,
      }) as unknown as AnyRun,
    resume: (runId, store) => resumeLoraGrpo(runId, { policy: loraOnnx, rewards: digits.rewards, store }) as unknown as AnyRun,
    fingerprint: (r) => {
      const { layers, updates } = (r as { adapter: { layers: unknown; updates: number } }).adapter;
      return JSON.stringify({ layers, updates });
    },
    dispose: () => undefined,
  },
  {
    name: 'router',
    epochs: 2,
    items: 4,
    concurrent: false,
    start: (o) =>
      routerGrpo({
        policy: slow(armPolicy(), o.delayMs),
        dataset: routerData,
        rewards: [right],
        arms,
        groupSize: 4,
        batchSize: 2,
        epochs: 2,
        store: o.store,
        runId: o.runId,
        signal: o.signal,
        onEpoch: o.onEpoch,
      }) as unknown as AnyRun,
    resume: (runId, store) => resumeRouterGrpo(runId, { policy: armPolicy(), rewards: [right], store }) as unknown as AnyRun,
    fingerprint: (r) => JSON.stringify((r as { router: unknown }).router),
    dispose: () => undefined,
  },
  {
    name: 'best-of-g (a method defined in the tests)',
    epochs: 2,
    items: 4,
    concurrent: true,
    start: (o) =>
      bestOfGRun({
        policy: slow(countingPolicy(), o.delayMs),
        dataset: [{ prompt: 'one' }, { prompt: 'two' }, { prompt: 'three' }, { prompt: 'four' }],
        rewards: [lengthReward],
        epochs: 2,
        concurrency: o.concurrency ?? 1,
        store: o.store,
        runId: o.runId,
        signal: o.signal,
        onEpoch: o.onEpoch,
      } satisfies LoopHandles & Record<string, unknown>) as unknown as AnyRun,
    resume: (runId, store) => resumeBestOfG(runId, { policy: countingPolicy(), rewards: [lengthReward], store }) as unknown as AnyRun,
    fingerprint: (r) => JSON.stringify((r as { picks: unknown }).picks),
    dispose: () => undefined,
  },
];

async function drain(run: AnyRun, stop?: (event: { type: string; [key: string]: unknown }) => boolean, controller?: AbortController) {
  const events: Array<{ type: string; [key: string]: unknown }> = [];
  for await (const event of run) {
    events.push(event);
    if (stop?.(event)) controller?.abort();
  }
  return events;
}

describe.each(cases)('$name', (c) => {
  let reference: string;
  beforeAll(async () => {
    const result = await c.start({ store: new MemoryStore(), runId: 'reference' }).result();
    reference = c.fingerprint(result);
    c.dispose(result);
  }, 120_000);

  it('stopped mid-step and resumed in a file store, ends as the uninterrupted run', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'webgrpo-contract-'));
    dirs.push(dir);
    const controller = new AbortController();
    const run = c.start({ store: await openFileStore(dir), runId: 'stopped', signal: controller.signal });
    await drain(run, (e) => e.type === 'item-end' && e.step === 2, controller);
    const stopped = await run.result();
    expect(stopped).toMatchObject({ status: 'aborted', stepsCompleted: 1 });
    c.dispose(stopped);
    const store = await openFileStore(dir);
    expect(await store.getItemResults('stopped', 2)).toHaveLength(1);
    const resumed = c.resume('stopped', store);
    const reused = (await drain(resumed)).flatMap((e) => (e.type === 'item-end' ? [e.reused] : []));
    const result = await resumed.result();
    expect(reused).toEqual([true, false, false, false, false, false]);
    expect(c.fingerprint(result)).toBe(reference);
    c.dispose(result);
    await store.close();
  }, 120_000);

  it('refuses a second loop on a running run with AlreadyRunningError', async () => {
    const store = new MemoryStore();
    const iterator = c.start({ store, runId: 'busy', delayMs: 20 })[Symbol.asyncIterator]();
    await iterator.next(); // run-start: the run is locked now.
    await expect(c.resume('busy', store).result()).rejects.toBeInstanceOf(AlreadyRunningError);
    await iterator.return?.();
    expect((await store.getRun('busy'))?.status).toBe('aborted');
    const result = await c.resume('busy', store).result();
    expect(c.fingerprint(result)).toBe(reference);
    c.dispose(result);
  }, 120_000);

  it('cancels within one step, leaving nothing half-written', async () => {
    const store = new MemoryStore();
    const controller = new AbortController();
    const events = await drain(c.start({ store, runId: 'cancel', signal: controller.signal, delayMs: 30 }), (e) => e.type === 'item-start', controller);
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'aborted', stepsCompleted: 0 });
    expect(events.some((e) => e.type === 'item-end' || e.type === 'step-end')).toBe(false);
    expect(await store.lastStep('cancel')).toBeUndefined();
    expect(await store.getItemResults('cancel', 1)).toEqual([]);
  }, 120_000);

  it('hands every group of each epoch to onEpoch and announces each epoch', async () => {
    const store = new MemoryStore();
    const handed: EpochExport[] = [];
    const run = c.start({ store, runId: 'epochs', onEpoch: async (e) => void handed.push(e) });
    const events = await drain(run);
    c.dispose(await run.result());
    expect(handed.map((e) => e.epoch)).toEqual([1, 2]);
    expect(events.filter((e) => e.type === 'epoch-end').map((e) => e.epoch)).toEqual([1, 2]);
    const all = runGroups(await store.readBundle('epochs'));
    expect(handed.flatMap((e) => e.groups)).toEqual(all);
    for (const e of handed) expect(new Set(e.groups.map((g) => g.id.split(':')[2])).size).toBe(c.items);
  }, 120_000);

  it('exports, imports into IndexedDB and resumes there', async () => {
    const source = new MemoryStore();
    const controller = new AbortController();
    const run = c.start({ store: source, runId: 'moved', signal: controller.signal });
    await drain(run, (e) => e.type === 'item-end' && e.step === 3, controller);
    c.dispose(await run.result());
    const target = await openIdbStore({ name: `contract-${c.name}` });
    await importRun(target, JSON.stringify(await exportRun(source, 'moved')));
    const result = await c.resume('moved', target).result();
    expect(c.fingerprint(result)).toBe(reference);
    c.dispose(result);
    await target.close();
  }, 120_000);

  it.runIf(c.concurrent)('works items of a step concurrently, to the same end', async () => {
    let active = 0;
    let most = 0;
    const store = new MemoryStore();
    const run = c.start({ store, runId: 'concurrent', concurrency: 2, delayMs: 10 });
    for await (const event of run) {
      if (event.type === 'item-start') most = Math.max(most, ++active);
      if (event.type === 'rewards') active -= 1;
    }
    const result = await run.result();
    expect(most).toBe(2);
    expect(c.fingerprint(result)).toBe(reference);
  }, 120_000);
});
