/**
 * Runs stored by webgrpo before step records became common fields plus a per-method payload
 * (schema v4, test/fixtures/v4) still open in every store and resume to the same end as runs
 * made today without interruption.
 */
import 'fake-indexeddb/auto';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDB } from 'idb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gradientGrpo, resumeGradientGrpo, type AdapterFile } from '../../lib/grad.js';
import { expectSameHeadAdapter } from './helpers/head-adapter.js';
import { openIdbStore, sealUnverifiedIdb as sealDatabase } from '../../lib/idb.js';
import {
  importRun,
  MemoryStore,
  resumeRouterGrpo,
  resumeTrainingFreeGrpo,
  routerGrpo,
  runGroups,
  trainingFreeGrpo,
  type Store,
} from '../../lib/index.js';
import { alphabetise, digits } from '../../lib/tasks/index.js';
import { payloadOf, validateBundle } from '../../lib/method.js';
import { openFileStore, sealUnverified } from '../../lib/node.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { migrate } from '../../lib/store/idb/schema.js';
import { scriptedPolicy } from '../tfgrpo/helpers/scripted-policy.js';
import { methodRecords } from '../../lib/methods/records.js';
import { armPolicy } from '../fixtures/v5/runs.js';

const FIXTURES = new URL('../fixtures/v4/', import.meta.url).pathname;

// The options the fixtures' runs were started with.
const tf = { dataset: alphabetise.dataset({ size: 4, seed: 1 }), rewards: alphabetise.rewards, groupSize: 3, epochs: 1, batchSize: 2, task: 'alphabetise' };
const exemplars = { ...tf, mode: 'exemplars' as const, epochs: 2 };
const arms = [
  { id: 'plain', label: 'Plain' },
  { id: 'work', label: 'Show work', instruction: 'Show your work.' },
];
const right = { name: 'right', score: ({ text }: { text: string }) => (text === 'right' ? 1 : 0) };
const router = { dataset: [{ prompt: '1+1' }, { prompt: '2+2' }, { prompt: '3+3' }, { prompt: '4+4' }], rewards: [right], arms, groupSize: 4, epochs: 2, batchSize: 2 };
const gradient = { dataset: digits.dataset({ size: 4, seed: 1 }), rewards: digits.rewards, task: 'digits', groupSize: 4, batchSize: 2, maxNewTokens: 4, epochs: 1, head: { rank: 2 } };

let policy: OnnxPolicy;
const dirs: string[] = [];
const expected: { lessons?: string; exemplars?: string; router?: string; gradient?: AdapterFile } = {};
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: await bundledModelPath(), hiddenState: true });
  expected.lessons = JSON.stringify((await trainingFreeGrpo({ ...tf, policy: scriptedPolicy() }).result()).library);
  expected.exemplars = JSON.stringify((await trainingFreeGrpo({ ...exemplars, policy: scriptedPolicy() }).result()).library);
  expected.router = JSON.stringify((await routerGrpo({ ...router, policy: armPolicy() }).result()).router);
  const trained = await gradientGrpo({ ...gradient, policy }).result();
  expected.gradient = trained.adapter;
  trained.trainer.dispose();
}, 120_000);
afterAll(async () => {
  await policy?.dispose();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** Every fixture run in `store` reads, validates and exports, and the unfinished ones resume to the uninterrupted end. */
async function resumesAll(store: Store): Promise<void> {
  const runs = await store.listRuns();
  expect(runs.map((r) => r.id).sort()).toEqual(['exemplars', 'gradient', 'lessons', 'router']);
  for (const run of runs) {
    const bundle = await store.readBundle(run.id);
    expect(() => validateBundle(bundle)).not.toThrow();
    expect(runGroups(bundle).length).toBeGreaterThan(0);
  }
  const lessons = await store.lastStep('lessons');
  expect(JSON.stringify(payloadOf(lessons, 'training-free')?.library)).toBe(expected.lessons);
  const ex = await resumeTrainingFreeGrpo('exemplars', { policy: scriptedPolicy(), rewards: tf.rewards, store }).result();
  expect(JSON.stringify(ex.library)).toBe(expected.exemplars);
  const routed = await resumeRouterGrpo('router', { policy: armPolicy(), rewards: [right], store }).result();
  expect(JSON.stringify(routed.router)).toBe(expected.router);
  const trained = await resumeGradientGrpo('gradient', { policy, rewards: gradient.rewards, store }).result();
  expectSameHeadAdapter(trained.adapter, expected.gradient!);
  trained.trainer.dispose();
}

describe('schema v4 runs', () => {
  it('open and resume in a file store', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'webgrpo-v4-'));
    dirs.push(dir);
    await cp(join(FIXTURES, 'file-store'), join(dir, 'store'), { recursive: true });
    // Written before checksums: unverifiable until its owner seals it (the explicit upgrade).
    expect((await sealUnverified(join(dir, 'store'))).length).toBeGreaterThan(0);
    const store = await openFileStore(join(dir, 'store'));
    await resumesAll(store);
    await store.close();
  }, 120_000);

  it('open and resume in IndexedDB', async () => {
    const dump = JSON.parse(await readFile(join(FIXTURES, 'indexeddb.json'), 'utf8')) as { version: number; stores: Record<string, unknown[]> };
    // The database as schema v4 left it: its object stores, then its records.
    const raw = await openDB('webgrpo-v4', dump.version, { upgrade: (db, oldVersion, newVersion, tx) => migrate(db as never, oldVersion, newVersion!, tx as never, methodRecords) });
    for (const [name, records] of Object.entries(dump.stores)) for (const record of records) await raw.put(name as never, record as never);
    raw.close();
    // Written before checksums: unverifiable until its owner seals it, after the schema upgrade the seal opens it with.
    expect((await sealDatabase({ name: 'webgrpo-v4' })).length).toBeGreaterThan(0);
    const store = await openIdbStore({ name: 'webgrpo-v4' });
    await resumesAll(store);
    await store.close();
  }, 120_000);

  it('import from their exports and resume', async () => {
    const store = new MemoryStore();
    for (const id of ['lessons', 'exemplars', 'router', 'gradient']) {
      const run = await importRun(store, await readFile(join(FIXTURES, `${id}.run.json`), 'utf8'));
      expect(run.id).toBe(id);
    }
    await resumesAll(store);
  }, 120_000);
});
