/**
 * Runs stored by webgrpo before stored records carried checksums (test/fixtures/v5: one run per
 * method, four of them interrupted inside a step) still open and list in the file store and in
 * IndexedDB, read whole, and resume to the same end as the same runs made today without
 * interruption.
 */
import 'fake-indexeddb/auto';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDB } from 'idb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gradientGrpo, loraGrpo, resumeGradientGrpo, resumeLoraGrpo } from '../../lib/methods/gradient/method.js';
import { resumeRouterGrpo, routerGrpo } from '../../lib/methods/router/method.js';
import { resumeTrainingFreeGrpo, trainingFreeGrpo } from '../../lib/methods/training-free/method.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import type { AdapterFile, LoraAdapterFile } from '../../lib/grad.js';
import { openFileStore, sealUnverified } from '../../lib/node.js';
import { openIdbStore, sealUnverifiedIdb as sealDatabase } from '../../lib/idb.js';
import { migrate } from '../../lib/store/idb/schema.js';
import { payloadOf } from '../../lib/store/records/step.js';
import type { Store } from '../../lib/store/store.js';
import { validateBundle } from '../../lib/method.js';
import { armPolicy, exemplars, gradient, INTERRUPTED, lessons, lora, right, router, RUN_IDS } from '../fixtures/v5/runs.js';
import { scriptedPolicy } from '../tfgrpo/helpers/scripted-policy.js';
import { expectSameHeadAdapter } from './helpers/head-adapter.js';
import { methodRecords } from '../../lib/methods/records.js';
import { expectSameLoraAdapter } from './helpers/lora-adapter.js';

const FIXTURES = new URL('../fixtures/v5/', import.meta.url).pathname;

let head: OnnxPolicy;
let decoder: OnnxPolicy;
const dirs: string[] = [];
const expected: Record<'lessons' | 'exemplars' | 'router', string> = { lessons: '', exemplars: '', router: '' };
let expectedHead: AdapterFile;
let expectedLora: LoraAdapterFile;
beforeAll(async () => {
  head = await loadOnnxPolicy({ model: await bundledModelPath(), hiddenState: true });
  decoder = await loadOnnxPolicy({ model: await bundledModelPath() });
  expected.lessons = JSON.stringify((await trainingFreeGrpo({ ...lessons, policy: scriptedPolicy() }).result()).library);
  expected.exemplars = JSON.stringify((await trainingFreeGrpo({ ...exemplars, policy: scriptedPolicy() }).result()).library);
  expected.router = JSON.stringify((await routerGrpo({ ...router, policy: armPolicy() }).result()).router);
  const trained = await gradientGrpo({ ...gradient, policy: head }).result();
  expectedHead = trained.adapter;
  trained.trainer.dispose();
  // The fixture's lora run was stored by the removed CPU engine; it resumes on the graph engine, as this run trains.
  const adapted = await loraGrpo({ ...lora, policy: decoder }).result();
  expectedLora = adapted.adapter;
  adapted.trainer.dispose();
}, 240_000);
afterAll(async () => {
  await head?.dispose();
  await decoder?.dispose();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** Every fixture run in `store` lists, reads whole and validates; the interrupted ones resume to the uninterrupted end. */
async function resumesAll(store: Store): Promise<void> {
  const runs = await store.listRuns();
  expect(runs.map((r) => r.id).sort()).toEqual([...RUN_IDS]);
  for (const run of runs) {
    expect(run.status).toBe(run.id === 'lessons' ? 'completed' : 'aborted');
    const bundle = await store.readBundle(run.id);
    expect(() => validateBundle(bundle)).not.toThrow();
    expect(bundle.steps).toHaveLength(run.id === 'lessons' ? 2 : 1);
    expect(bundle.pending).toHaveLength(run.id === 'lessons' ? 0 : 1);
  }
  expect(INTERRUPTED.every((id) => runs.some((r) => r.id === id && r.status === 'aborted'))).toBe(true);
  expect(JSON.stringify(payloadOf(await store.lastStep('lessons'), 'training-free')?.library)).toBe(expected.lessons);

  const ex = await resumeTrainingFreeGrpo('exemplars', { policy: scriptedPolicy(), rewards: exemplars.rewards, store }).result();
  expect([ex.status, JSON.stringify(ex.library)]).toEqual(['completed', expected.exemplars]);
  const routed = await resumeRouterGrpo('router', { policy: armPolicy(), rewards: [right], store }).result();
  expect([routed.status, JSON.stringify(routed.router)]).toEqual(['completed', expected.router]);
  const trained = await resumeGradientGrpo('gradient', { policy: head, rewards: gradient.rewards, store }).result();
  expect(trained.status).toBe('completed');
  expectSameHeadAdapter(trained.adapter, expectedHead);
  trained.trainer.dispose();
  const adapted = await resumeLoraGrpo('lora', { policy: decoder, rewards: lora.rewards, store }).result();
  expect(adapted.status).toBe('completed');
  expectSameLoraAdapter(adapted.adapter, expectedLora);
  adapted.trainer.dispose();
  expect((await store.listRuns()).every((r) => r.status === 'completed')).toBe(true);
}

describe('runs stored before checksums', () => {
  it('open, list and resume in a file store', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'webgrpo-v5-'));
    dirs.push(dir);
    await cp(join(FIXTURES, 'file-store'), join(dir, 'store'), { recursive: true });
    // Unverifiable as stored (every run is named damaged, by its missing key), whole once sealed.
    const unsealed = await openFileStore(join(dir, 'store'));
    expect((await unsealed.listDamaged()).map((d) => [d.runId, d.error.field]).sort()).toEqual([...RUN_IDS].sort().map((id) => [id, 'integrity']));
    await unsealed.close();
    expect((await sealUnverified(join(dir, 'store'))).length).toBeGreaterThan(0);
    const store = await openFileStore(join(dir, 'store'));
    await resumesAll(store);
    await store.close();
    // What the resumes wrote carries checksums; what they only read is as it was stored, sealed.
    const read = async (path: string) => JSON.parse(await readFile(join(dir, 'store', 'runs', path), 'utf8'));
    for (const id of INTERRUPTED) {
      expect([id, 'integrity' in (await read(`${id}/run.json`)), 'integrity' in (await read(`${id}/steps/000002.json`))]).toEqual([id, true, true]);
      const { integrity, ...stored } = await read(`${id}/steps/000001.json`);
      expect(integrity).toBeDefined();
      expect(stored).toEqual(JSON.parse(await readFile(join(FIXTURES, 'file-store', 'runs', id, 'steps', '000001.json'), 'utf8')));
    }
  }, 240_000);

  it('open, list and resume in IndexedDB', async () => {
    const dump = JSON.parse(await readFile(join(FIXTURES, 'indexeddb.json'), 'utf8')) as { version: number; stores: Record<string, unknown[]> };
    // The database as it was written: its object stores, then its records.
    const raw = await openDB('webgrpo-v5', dump.version, { upgrade: (db, oldVersion, newVersion, tx) => migrate(db as never, oldVersion, newVersion!, tx as never, methodRecords) });
    for (const [name, records] of Object.entries(dump.stores)) for (const record of records) await raw.put(name as never, record as never);
    raw.close();
    // Unverifiable as stored: every run named damaged by its missing key, and reading it changes nothing.
    const unsealed = await openIdbStore({ name: 'webgrpo-v5' });
    const damaged = await unsealed.listDamaged();
    expect(damaged.map((d) => [d.runId, d.error.field]).sort()).toEqual([...RUN_IDS].sort().map((id) => [id, 'integrity']));
    expect(damaged[0].error.message).toMatch(/has no checksum .*sealUnverifiedIdb\(\{ name \}\) from webgrpo\/idb/);
    expect((await unsealed.listRuns()).length).toBe(0);
    await unsealed.close();
    const { groups: _g, leases: _l, ...runStores } = dump.stores;
    expect(await rows('webgrpo-v5')).toEqual(runStores);
    // Sealed on its owner's word: every record once (runs, dataset rows, steps, pending, adapters), and not again.
    const sealedRows = await sealDatabase({ name: 'webgrpo-v5' });
    expect(sealedRows.length).toBe(Object.values(runStores).reduce((n, list) => n + list.length, 0));
    expect(await sealDatabase({ name: 'webgrpo-v5' })).toEqual([]);
    const store = await openIdbStore({ name: 'webgrpo-v5' });
    await resumesAll(store);
    await store.close();
    // What the resumes only read is as it was stored, with its checksums.
    const after = await rows('webgrpo-v5');
    for (const id of INTERRUPTED) {
      const stored = dump.stores.steps.find((row) => (row as { runId: string; step: number }).runId === id && (row as { step: number }).step === 1);
      const { integrity, ...kept } = after.steps.find((row) => (row as { runId: string; step: number }).runId === id && (row as { step: number }).step === 1) as Record<string, unknown>;
      expect([id, integrity !== undefined, kept]).toEqual([id, true, stored]);
    }
  }, 240_000);
});

/** Every record of the database's run object stores, as stored. */
async function rows(name: string): Promise<Record<string, unknown[]>> {
  const db = await openDB(name);
  const out: Record<string, unknown[]> = {};
  for (const store of ['runs', 'items', 'steps', 'pending', 'adapters']) out[store] = await db.getAll(store);
  db.close();
  return out;
}
