/**
 * One contract, three stores: memory, IndexedDB (fake-indexeddb in Node; the real one runs in
 * test/browser/tfgrpo.test.ts) and files. Plus what only one store has: IndexedDB migrations and
 * quota handling, file-store versions, stale lock files and leftovers of killed writes.
 */
import 'fake-indexeddb/auto';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDB } from 'idb';
import { afterAll, describe, expect, it } from 'vitest';
import {
  AlreadyRunningError,
  exportRun,
  importRun,
  InvalidInputError,
  libraryAt,
  MemoryStore,
  NotFoundError,
  StoreCorruptError,
  StoreError,
  StoreQuotaError,
  type Store,
} from '../../lib/index.js';
import { openIdbStore, sealUnverifiedIdb as sealUnverified } from '../../lib/idb.js';
import { openFileStore, FILE_STORE_VERSION } from '../../lib/node.js';
import { MIGRATIONS, type WebgrpoDB } from '../../lib/store/idb/schema.js';
import { sampleItemResult, sampleItems, sampleRun, sampleStep } from './helpers/records.js';
import { methodRecords } from '../../lib/methods/records.js';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'webgrpo-store-'));
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

let dbCounter = 0;
interface Kind {
  name: string;
  open(): Promise<{ store: Store; twin: () => Promise<Store> }>;
}
const kinds: Kind[] = [
  {
    name: 'memory',
    async open() {
      const store = new MemoryStore();
      return { store, twin: async () => store };
    },
  },
  {
    name: 'indexeddb',
    async open() {
      const name = `store-test-${dbCounter++}`;
      return { store: await openIdbStore({ name }), twin: () => openIdbStore({ name }) };
    },
  },
  {
    name: 'file',
    async open() {
      const dir = await tempDir();
      return { store: await openFileStore(dir), twin: () => openFileStore(dir) };
    },
  },
];

async function expectError<T>(promise: Promise<unknown>, type: new (...args: never[]) => T, message?: RegExp): Promise<T> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(type);
    if (message) expect((error as Error).message).toMatch(message);
    return error as T;
  }
  throw new Error(`expected a ${type.name}`);
}

describe.each(kinds)('$name store', (kind) => {
  it('creates, reads, lists and updates runs; reads are copies', async () => {
    const { store } = await kind.open();
    const items = sampleItems();
    await store.createRun(sampleRun('a', items, '2025-01-01T00:00:00.000Z'), items);
    await store.createRun(sampleRun('b', items, '2025-02-01T00:00:00.000Z'), items);
    await expectError(store.createRun(sampleRun('a'), items), StoreError, /exists already/);

    const run = await store.getRun('a');
    expect(run).toEqual(sampleRun('a', items));
    (run as { status: string }).status = 'mutated';
    expect((await store.getRun('a'))?.status).toBe('running');
    expect(await store.getRun('nope')).toBeUndefined();
    expect((await store.listRuns()).map((r) => r.id)).toEqual(['b', 'a']);
    expect(await store.getItems('a')).toEqual(items);

    await store.setRunStatus('a', { status: 'failed', error: 'boom' });
    expect(await store.getRun('a')).toMatchObject({ status: 'failed', error: 'boom' });
    await store.setRunStatus('a', { status: 'aborted' });
    expect((await store.getRun('a'))?.error).toBeUndefined();
    expect((await store.listRuns())[0].id).toBe('a');
    await expectError(store.setRunStatus('nope', { status: 'aborted' }), NotFoundError);
    await store.close();
  });

  it('keeps finished items of a step until the step commits, in one transaction', async () => {
    const { store } = await kind.open();
    await store.createRun(sampleRun('r'), sampleItems());
    await store.putItemResult('r', sampleItemResult(1, 1));
    await store.putItemResult('r', sampleItemResult(1, 0));
    await store.putItemResult('r', sampleItemResult(2, 0));
    expect((await store.getItemResults('r', 1)).map((r) => r.position)).toEqual([0, 1]);
    expect(await store.getItemResults('r', 3)).toEqual([]);

    await expectError(store.commitStep('r', sampleStep(2)), StoreError, /expects step 1 next/);
    await store.commitStep('r', sampleStep(1));
    expect(await store.getItemResults('r', 1)).toEqual([]);
    expect(await store.getItemResults('r', 2)).toHaveLength(1);
    await expectError(store.commitStep('r', sampleStep(1)), StoreError);
    await store.commitStep('r', sampleStep(2));
    await store.commitStep('r', sampleStep(3));

    expect((await store.lastStep('r'))?.step).toBe(3);
    expect(await store.getStep('r', 2)).toEqual(sampleStep(2));
    expect(await store.getStep('r', 9)).toBeUndefined();
    expect((await store.listSteps('r')).map((s) => s.step)).toEqual([1, 2, 3]);
    expect((await store.listSteps('r', { from: 2, to: 2 })).map((s) => s.step)).toEqual([2]);
    expect((await store.getRun('r'))?.updatedAt).toBe(sampleStep(3).committedAt);
    expect(await libraryAt(store, 'r', 0)).toEqual(sampleRun('r').initialLibrary);
    expect(await libraryAt(store, 'r', 2)).toEqual(sampleStep(2).payload.library);
    await expectError(libraryAt(store, 'r', 7), NotFoundError);
    await store.close();
  });

  it('lets one loop at a time lock a run, across store instances', async () => {
    const { store, twin } = await kind.open();
    await store.createRun(sampleRun('r'), sampleItems());
    await expectError(store.lockRun('nope'), NotFoundError);
    const lock = await store.lockRun('r');
    const error = await expectError(store.lockRun('r'), AlreadyRunningError, /already running/);
    expect(error.code).toBe('AlreadyRunning');
    expect(error.runId).toBe('r');
    const other = await twin();
    await expectError(other.lockRun('r'), AlreadyRunningError);
    await lock.release();
    await lock.release();
    const again = await other.lockRun('r');
    await expectError(store.lockRun('r'), AlreadyRunningError);
    await again.release();
    if (other !== store) await other.close();
    await store.close();
  });

  it('exports and imports a whole run, validated', async () => {
    const { store } = await kind.open();
    await store.createRun(sampleRun('r'), sampleItems());
    await store.commitStep('r', sampleStep(1));
    await store.putItemResult('r', sampleItemResult(2, 0));
    const exported = await exportRun(store, 'r');
    expect(exported).toMatchObject({ format: 'webgrpo.run', version: 2 });
    const json = JSON.stringify(exported);

    const target = new MemoryStore();
    const imported = await importRun(target, json);
    expect(imported.status).toBe('aborted');
    const bundle = await target.readBundle('r');
    expect(bundle.steps).toEqual([sampleStep(1)]);
    expect(bundle.pending).toEqual([sampleItemResult(2, 0)]);
    expect(bundle.items).toEqual(sampleItems());

    // Back into this kind of store, under a clash, then replacing.
    await expectError(importRun(store, json), StoreError, /exists already/);
    await importRun(store, json, { runId: 'copy' });
    expect(await store.readBundle('copy')).toEqual({ ...(await target.readBundle('r')), run: { ...(await target.readBundle('r')).run, id: 'copy' } });
    const changed = JSON.parse(json);
    changed.steps = [];
    changed.pending = [];
    await importRun(store, changed, { replace: true });
    expect(await store.lastStep('r')).toBeUndefined();

    await store.deleteRun('copy');
    expect(await store.getRun('copy')).toBeUndefined();
    await expectError(store.readBundle('copy'), NotFoundError);
    await store.close();
  });
});

describe('importRun validation', () => {
  async function exported() {
    const store = new MemoryStore();
    await store.createRun(sampleRun('r'), sampleItems());
    await store.commitStep('r', sampleStep(1));
    await store.commitStep('r', sampleStep(2));
    return JSON.parse(JSON.stringify(await exportRun(store, 'r')));
  }

  it('names the bad field and stores nothing', async () => {
    const cases: Array<[(doc: Record<string, any>) => void, string]> = [
      [(d) => (d.format = 'other'), 'run.format'],
      [(d) => (d.version = 99), 'run.version'],
      [(d) => (d.run.config.groupSize = 0), 'run.run.config.groupSize'],
      [(d) => (d.items[1] = { prompt: 'x', messages: [] }), 'run.items[1]'],
      [(d) => (d.steps[1].step = 5), 'run.steps[1].step'],
      [(d) => (d.steps[0].items[0].rollouts[1].logprobs[2] = 'x'), 'run.steps[0].items[0].rollouts[1].logprobs[2]'],
      [(d) => (d.steps[0].items[0].index = 99), 'run.steps[0].items[0].index'],
      [(d) => (d.steps[0].payload.library.entries[1].id = 'G0'), 'run.steps[0].payload.library.entries[1].id'],
      [(d) => (d.steps[0].payload.kind = 'router'), 'run.steps[0].payload.kind'],
      [(d) => delete d.steps[0].payload, 'run.steps[0].payload'],
      [(d) => (d.pending = [d.steps[0].items[0]]), 'run.pending[0].step'],
      [(d) => (d.run.itemCount = 7), 'run.items'],
    ];
    for (const [corrupt, argument] of cases) {
      const doc = await exported();
      corrupt(doc);
      const store = new MemoryStore();
      const error = await expectError(importRun(store, doc), InvalidInputError);
      expect(error.argument).toBe(argument);
      expect(await store.listRuns()).toEqual([]);
    }
    await expectError(importRun(new MemoryStore(), '{not json'), InvalidInputError, /not valid JSON/);
  });
});

describe('IndexedDB specifics', () => {
  it('migrates a version-1 database, keeping its runs', async () => {
    const name = `migrate-${dbCounter++}`;
    const v1 = await openDB<WebgrpoDB>(name, 1, { upgrade: (db, _old, _new, tx) => MIGRATIONS[0](db, tx, methodRecords) });
    await v1.put('runs', sampleRun('old'));
    await v1.put('items', { runId: 'old', index: 0, item: sampleItems()[0] });
    expect([...v1.objectStoreNames]).not.toContain('leases');
    v1.close();

    // Written before checksums: unverifiable (named by the missing key) until its owner seals it.
    const unsealed = await openIdbStore({ name });
    await expect(unsealed.getRun('old')).rejects.toMatchObject({ code: 'StoreCorrupt', field: 'integrity' });
    await unsealed.close();
    expect(await sealUnverified({ name })).toEqual(['runs "old"', 'items ["old",0]']);
    const store = await openIdbStore({ name });
    expect(await store.getRun('old')).toEqual(sampleRun('old'));
    const lock = await store.lockRun('old');
    await lock.release();
    await store.close();
    const raw = await openDB(name);
    expect(raw.version).toBe(MIGRATIONS.length);
    expect([...raw.objectStoreNames].sort()).toEqual(['adapters', 'groups', 'items', 'leases', 'pending', 'runs', 'steps']);
    raw.close();
  });

  it('turns a quota failure into StoreQuotaError and keeps the run as it was', async () => {
    const store = await openIdbStore({ name: `quota-${dbCounter++}` });
    await store.createRun(sampleRun('r'), sampleItems());
    await store.commitStep('r', sampleStep(1));
    await store.putItemResult('r', sampleItemResult(2, 0));
    const before = await store.readBundle('r');

    // What a browser does when the origin is out of space: the write's request fails with
    // QuotaExceededError and its transaction aborts.
    const proto = (globalThis as unknown as { IDBObjectStore: { prototype: Record<string, unknown> } }).IDBObjectStore.prototype;
    const { add, put } = proto as { add: (...a: unknown[]) => unknown; put: (...a: unknown[]) => unknown };
    let calls = 0;
    const failing = function (this: unknown, original: (...a: unknown[]) => unknown) {
      return function (this: unknown, ...args: unknown[]) {
        calls += 1;
        if (calls === 1) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
        return original.apply(this, args);
      };
    };
    proto.add = failing(add);
    proto.put = failing(put);
    try {
      const error = await expectError(store.commitStep('r', sampleStep(2)), StoreQuotaError, /quota/);
      expect(error.code).toBe('StoreQuota');
    } finally {
      proto.add = add;
      proto.put = put;
    }
    expect(await store.readBundle('r')).toEqual(before);
    await store.commitStep('r', sampleStep(2));
    expect((await store.lastStep('r'))?.step).toBe(2);
    await store.close();
  });

  it('refuses work after close', async () => {
    const store = await openIdbStore({ name: `closed-${dbCounter++}` });
    await store.close();
    await expectError(store.listRuns(), StoreError, /closed/);
  });
});

describe('file store specifics', () => {
  it('writes a versioned layout and refuses folders it does not own or a newer version', async () => {
    const dir = await tempDir();
    const store = await openFileStore(dir);
    await store.createRun(sampleRun('r'), sampleItems());
    expect((await readdir(dir)).sort()).toEqual(['runs', 'store.json']);
    await writeFile(join(dir, 'store.json'), JSON.stringify({ format: 'webgrpo.file-store', schemaVersion: FILE_STORE_VERSION + 1 }));
    await expectError(openFileStore(dir), StoreError, /newer webgrpo/);

    const other = await tempDir();
    await writeFile(join(other, 'notes.txt'), 'mine');
    await expectError(openFileStore(other), StoreError, /not empty/);
  });

  it('ignores leftovers of a killed write and reports corrupt files', async () => {
    const dir = await tempDir();
    const store = await openFileStore(dir);
    await store.createRun(sampleRun('r'), sampleItems());
    await store.commitStep('r', sampleStep(1));
    // A process killed between writing a temporary file and renaming it leaves this behind.
    await writeFile(join(dir, 'runs', 'r', 'steps', '000002.json.999.abc.tmp'), '{"half');
    await writeFile(join(dir, 'runs', 'r', 'pending', '000002-0000.json.999.abc.tmp'), '{"half');
    expect((await store.lastStep('r'))?.step).toBe(1);
    expect(await store.getItemResults('r', 2)).toEqual([]);
    await store.commitStep('r', sampleStep(2));

    await writeFile(join(dir, 'runs', 'r', 'steps', '000001.json'), '{"edited by hand');
    await expectError(store.getStep('r', 1), StoreCorruptError, /not valid JSON/);
    await expectError(store.createRun(sampleRun('../escape'), sampleItems()), StoreError, /folder name/);
  });

  it('takes over the lock of a process that died, not of a live one', async () => {
    const dir = await tempDir();
    const store = await openFileStore(dir);
    await store.createRun(sampleRun('r'), sampleItems());
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    await mkdir(join(dir, 'runs', 'r'), { recursive: true });
    const { hostname } = await import('node:os');
    await writeFile(join(dir, 'runs', 'r', 'lock'), JSON.stringify({ pid: Number(dead), hostname: hostname(), token: 'x' }));
    const lock = await store.lockRun('r');
    await lock.release();
    await writeFile(join(dir, 'runs', 'r', 'lock'), JSON.stringify({ pid: process.ppid, hostname: hostname(), token: 'x' }));
    await expectError(store.lockRun('r'), AlreadyRunningError, new RegExp(`process ${process.ppid}`));
  });
});
