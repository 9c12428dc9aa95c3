/**
 * A schema v4 step (test/fixtures/v4) reads back in today's shape: the common fields as they were,
 * and the method's fields moved into `payload` under the run's kind, in every store and through an
 * import. The stores also write the new shape back, so the migration runs once.
 */
import 'fake-indexeddb/auto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDB } from 'idb';
import { afterAll, describe, expect, it } from 'vitest';
import { openIdbStore, sealUnverifiedIdb as sealDatabase } from '../../lib/idb.js';
import { exportRun, importRun, MemoryStore, StoreCorruptError, type Store } from '../../lib/index.js';
import { RUN_EXPORT_VERSION, validateLibrary } from '../../lib/method.js';
import { FILE_STORE_VERSION, openFileStore, sealUnverified } from '../../lib/node.js';
import { migrate, SCHEMA_VERSION } from '../../lib/store/idb/schema.js';
import { upgradeV4Step } from '../../lib/store/records/upgrade-v4.js';
import { methodRecords } from '../../lib/methods/records.js';

const FIXTURES = new URL('../fixtures/v4/', import.meta.url).pathname;
const KINDS = { lessons: 'training-free', exemplars: 'training-free', gradient: 'gradient', router: 'router' } as const;
type Id = keyof typeof KINDS;
const COMMON = ['step', 'epoch', 'batch', 'items', 'stats', 'warnings', 'committedAt'];

type V4Step = Record<string, unknown> & { library: unknown };
/** Step 1 of each run as a v4 store or export holds it (each fixture is its own recording). */
type V4Source = (id: Id) => Promise<V4Step>;
const fileStep: V4Source = async (id) => JSON.parse(await readFile(join(FIXTURES, 'file-store', 'runs', id, 'steps', '000001.json'), 'utf8'));
const exportStep: V4Source = async (id) => JSON.parse(await readFile(join(FIXTURES, `${id}.run.json`), 'utf8')).steps[0];
const idbStep: V4Source = async (id) => {
  const dump = JSON.parse(await readFile(join(FIXTURES, 'indexeddb.json'), 'utf8')) as { stores: { steps: Array<V4Step & { runId: string }> } };
  const { runId: _runId, ...step } = dump.stores.steps.find((row) => row.runId === id && row.step === 1)!;
  return step as V4Step;
};

/** What a v4 step of run `id` must read as. */
function expectedShape(id: Id, old: V4Step): Record<string, unknown> {
  const common = Object.fromEntries(COMMON.map((key) => [key, old[key]]));
  const kind = KINDS[id];
  if (kind === 'gradient') return { ...common, payload: { kind, training: old.training } };
  if (kind === 'router') return { ...common, payload: { kind, routing: old.routing } };
  const { merge, proposed, applied, skippedOperations } = old;
  return { ...common, payload: { kind, ...(merge ? { merge } : {}), proposed, applied, skippedOperations, library: validateLibrary(old.library) } };
}

async function expectMigrated(store: Store, source: V4Source): Promise<void> {
  for (const id of Object.keys(KINDS) as Id[]) {
    const old = await source(id);
    const step = await store.getStep(id, 1);
    expect(step).toEqual(expectedShape(id, old));
    expect(Object.keys(step!).sort()).toEqual([...COMMON, 'payload'].sort());
  }
}

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function copiedFileStore(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'webgrpo-v4m-'));
  dirs.push(dir);
  await cp(join(FIXTURES, 'file-store'), join(dir, 'store'), { recursive: true });
  // Written before checksums: sealed on its owner's word, as `--seal-unverified` does.
  await sealUnverified(join(dir, 'store'));
  return join(dir, 'store');
}

describe('a migrated v4 step', () => {
  it('reads as common fields plus the payload of its kind in a file store, which rewrites its files once', async () => {
    const root = await copiedFileStore();
    const store = await openFileStore(root);
    await expectMigrated(store, fileStep);
    await store.close();
    expect(JSON.parse(await readFile(join(root, 'store.json'), 'utf8')).schemaVersion).toBe(FILE_STORE_VERSION);
    const onDisk = JSON.parse(await readFile(join(root, 'runs', 'router', 'steps', '000001.json'), 'utf8'));
    expect(onDisk.payload.kind).toBe('router');
    expect(onDisk.routing).toBeUndefined();
    expect(onDisk.library).toBeUndefined();
  });

  it('leaves a damaged v4 step file to the read, which names it', async () => {
    const root = await copiedFileStore();
    const path = join(root, 'runs', 'gradient', 'steps', '000001.json');
    await writeFile(path, '{"step": 1, "epo');
    const store = await openFileStore(root);
    await expect(store.readBundle('gradient')).rejects.toThrow(StoreCorruptError);
    expect((await store.getStep('router', 1))?.payload.kind).toBe('router');
    await store.close();
  });

  it('reads as common fields plus the payload of its kind in IndexedDB, upgraded in the database', async () => {
    const dump = JSON.parse(await readFile(join(FIXTURES, 'indexeddb.json'), 'utf8')) as { version: number; stores: Record<string, unknown[]> };
    const raw = await openDB('webgrpo-v4-migration', dump.version, { upgrade: (db, oldVersion, newVersion, tx) => migrate(db as never, oldVersion, newVersion!, tx as never, methodRecords) });
    for (const [name, records] of Object.entries(dump.stores)) for (const record of records) await raw.put(name as never, record as never);
    raw.close();
    // Written before checksums: sealed on its owner's word, once upgraded.
    expect((await sealDatabase({ name: 'webgrpo-v4-migration' })).length).toBeGreaterThan(0);
    const store = await openIdbStore({ name: 'webgrpo-v4-migration' });
    await expectMigrated(store, idbStep);
    await store.close();
    const upgraded = await openDB('webgrpo-v4-migration');
    expect(upgraded.version).toBe(SCHEMA_VERSION);
    const row = (await upgraded.get('steps' as never, ['gradient', 1] as never)) as Record<string, unknown>;
    expect(row).toMatchObject({ runId: 'gradient', payload: { kind: 'gradient' } });
    expect(row.training).toBeUndefined();
    upgraded.close();
  });

  it('reads as common fields plus the payload of its kind after importing a version 1 export, and exports as the current version', async () => {
    const store = new MemoryStore();
    for (const id of Object.keys(KINDS)) await importRun(store, await readFile(join(FIXTURES, `${id}.run.json`), 'utf8'));
    await expectMigrated(store, exportStep);
    const again = await exportRun(store, 'lessons');
    expect(again.version).toBe(RUN_EXPORT_VERSION);
    expect(RUN_EXPORT_VERSION).toBe(2);
  });

  it('keeps a registered method’s own fields in its payload and drops the library fields every v4 step carried', () => {
    const old = { step: 1, epoch: 1, batch: 1, items: [], stats: {}, warnings: [], committedAt: 't', proposed: [], applied: [], skippedOperations: [], library: {}, picks: [1] };
    expect(upgradeV4Step(old, 'best-of-g', methodRecords)).toEqual({ step: 1, epoch: 1, batch: 1, items: [], stats: {}, warnings: [], committedAt: 't', payload: { kind: 'best-of-g', picks: [1] } });
    const current = upgradeV4Step(old, 'best-of-g', methodRecords);
    expect(upgradeV4Step(current, 'best-of-g', methodRecords)).toBe(current);
  });
});
