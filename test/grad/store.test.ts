/**
 * The adapter's round trips: through each store (memory, IndexedDB via fake-indexeddb, files) as
 * the checkpoint committed with every step, through run export/import between stores, and through
 * the adapter file onto a fresh policy, which then samples exactly what the trained one samples.
 * Plus the file format's validation. The real IndexedDB in Chromium is covered by browser.test.ts.
 */
import 'fake-indexeddb/auto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attachAdapter,
  gradientGrpo,
  resumeGradientGrpo,
  type GradientResult,
  readAdapterFile,
  readCheckpoint,
  writeAdapterFile,
  type AdapterFile,
} from '../../lib/grad.js';
import {
  exportRun,
  importRun,
  InvalidInputError,
  MemoryStore,
  type Store,
} from '../../lib/index.js';
import { ADAPTER_FORMAT } from '../../lib/train/head/format.js';
import { digits } from '../../lib/tasks/index.js';
import { payloadOf } from '../../lib/method.js';
import { openIdbStore } from '../../lib/idb.js';
import { openFileStore } from '../../lib/node.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';

let trained: OnnxPolicy;
let fresh: OnnxPolicy;
const dirs: string[] = [];
beforeAll(async () => {
  const model = await bundledModelPath();
  [trained, fresh] = await Promise.all([loadOnnxPolicy({ model, hiddenState: true }), loadOnnxPolicy({ model, hiddenState: true })]);
});
afterAll(async () => {
  await Promise.all([trained?.dispose(), fresh?.dispose()]);
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'webgrpo-grad-store-'));
  dirs.push(dir);
  return dir;
}

let idbCounter = 0;
const stores: Array<[string, () => Promise<Store>]> = [
  ['memory', async () => new MemoryStore()],
  ['indexeddb', () => openIdbStore({ name: `grad-store-${idbCounter++}` })],
  ['file', async () => openFileStore(await tempDir())],
];

const train = (store: Store, runId: string, steps = 3): Promise<GradientResult> =>
  gradientGrpo({
    policy: trained,
    dataset: digits.dataset({ size: 2 * steps, seed: 4 }),
    rewards: digits.rewards,
    groupSize: 6,
    batchSize: 2,
    maxNewTokens: 12,
    seed: 4,
    store,
    runId,
  }).result();

describe.each(stores)('%s store', (_, open) => {
  it('keeps the adapter and optimizer state of the last committed step, exactly', async () => {
    const store = await open();
    const result = await train(store, 'run-a');
    try {
      const checkpoint = await store.getAdapter('run-a');
      expect(checkpoint!.step).toBe(3);
      const { state, weights } = readCheckpoint(checkpoint);
      const live = await result.trainer.state();
      expect(state.a).toEqual(live.a);
      expect(state.b).toEqual(live.b);
      expect(state.m).toEqual(live.m);
      expect(state.v).toEqual(live.v);
      expect(state.updates).toBe(3);
      expect(weights).toMatchObject({ hiddenSize: 128, vocabSize: 102, rank: 8, scale: 2 });
      // Training moved B away from zero.
      expect(state.b.some((x) => x !== 0)).toBe(true);
      // Steps carry their updates' metrics.
      const steps = await store.listSteps('run-a');
      expect(steps.map((s) => payloadOf(s, 'gradient')?.training.length)).toEqual([1, 1, 1]);
      expect(await store.getAdapter('run-a')).toEqual(checkpoint);
    } finally {
      result.trainer.dispose();
    }
  });

  it('exports the run with its adapter, and another kind of store imports and resumes it', async () => {
    const store = await open();
    const result = await train(store, 'run-b', 2);
    result.trainer.dispose();
    const exported = await exportRun(store, 'run-b');
    expect(exported.adapter?.step).toBe(2);
    const target = new MemoryStore();
    const imported = await importRun(target, JSON.parse(JSON.stringify(exported)), { runId: 'copy' });
    expect(imported.kind).toBe('gradient');
    expect(await target.getAdapter('copy')).toEqual(await store.getAdapter('run-b'));
    // A completed import resumes to an immediate, clean end with the same adapter.
    const resumed = await resumeGradientGrpo('copy', { policy: trained, rewards: digits.rewards, store: target }).result();
    resumed.trainer.dispose();
    expect(resumed.adapter.b).toBe(result.adapter.b);
    // The bundle is validated: a checkpoint that does not match the last step is refused.
    const broken = JSON.parse(JSON.stringify(exported));
    broken.adapter.step = 1;
    await expect(importRun(new MemoryStore(), broken, { runId: 'broken' })).rejects.toThrow(InvalidInputError);
  });
});

describe('adapter files', () => {
  let file: AdapterFile;
  beforeAll(async () => {
    const result = await train(new MemoryStore(), 'for-file');
    file = result.adapter;
    // The trained policy keeps sampling with the adapter until the trainer is disposed.
    const options = { prompt: 'Answer with digits only.', groupSize: 4, maxNewTokens: 10, seed: 21 };
    expected = await trained.generateGroup(options);
    result.trainer.dispose();
  });
  let expected: Awaited<ReturnType<OnnxPolicy['generateGroup']>>;

  it('load onto a fresh policy, which then samples exactly what the trained one did', async () => {
    expect(file).toMatchObject({ format: ADAPTER_FORMAT, version: 1, target: 'lm_head', rank: 8, updates: 3 });
    const text = JSON.stringify(file);
    const options = { prompt: 'Answer with digits only.', groupSize: 4, maxNewTokens: 10, seed: 21 };
    const before = await fresh.generateGroup(options);
    const attached = attachAdapter(fresh, text);
    try {
      expect(await fresh.generateGroup(options)).toEqual(expected);
      expect(before).not.toEqual(expected);
    } finally {
      attached.detach();
    }
    expect(await fresh.generateGroup(options)).toEqual(before);
  });

  it('round-trip their weights bit for bit, and refuse malformed files with errors naming the field', () => {
    const weights = readAdapterFile(file);
    expect(writeAdapterFile(weights, { updates: 3 }).b).toBe(file.b);
    const bad = (patch: Record<string, unknown>) => () => readAdapterFile({ ...file, ...patch });
    expect(bad({ format: 'other' })).toThrow(/adapter\.format/);
    expect(bad({ version: 2 })).toThrow(/newer than this webgrpo reads/);
    expect(bad({ rank: 4 })).toThrow(/adapter\.a/);
    expect(bad({ b: file.b.slice(0, -8) })).toThrow(/adapter\.b/);
    expect(bad({ scale: -1 })).toThrow(/adapter\.scale/);
    const nan = readAdapterFile(file);
    nan.a[3] = Number.NaN;
    expect(() => readAdapterFile(writeAdapterFile(nan))).toThrow(/must be finite/);
    expect(() => readAdapterFile('{ not json')).toThrow(InvalidInputError);
    expect(() => attachAdapter(fresh, { ...file, vocabSize: 50, b: writeAdapterFile({ ...weights, vocabSize: 50, b: new Float32Array(8 * 50) }).b })).toThrow(/vocabulary/);
  });
});
