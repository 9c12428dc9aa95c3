/**
 * Stored runs edited by hand, as a hostile user would: `config.epochs` 6 -> 1 or `batchSize` 2 -> 3
 * in an interrupted run's record, a garbled base64 adapter tensor, a deleted run.json. Each is a
 * `StoreCorruptError` naming the file (or IndexedDB record) and the field, in the file store and in
 * IndexedDB, with the records' checksums and (files) without them, as a store written before them
 * holds them once its owner sealed it (`--seal-unverified`); a file whose `integrity` key was
 * deleted (to hide an edit) is damage of its own; the run is listed as damaged by `listDamaged` and `webgrpo train --list`, the CLI
 * offers no resume, and nothing stored is changed by finding it.
 */
import 'fake-indexeddb/auto';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDB } from 'idb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as trainCli, type TrainIo } from '../../lib/cli/train.js';
import { StoreCorruptError } from '../../lib/errors.js';
import { gradientGrpo, resumeGradientGrpo } from '../../lib/methods/gradient/method.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { exportRun, importRun, MemoryStore } from '../../lib/index.js';
import { openFileStore, sealUnverified as sealFolder } from '../../lib/node.js';
import { openIdbStore, sealUnverifiedIdb as sealUnverified } from '../../lib/idb.js';
import type { RunExport } from '../../lib/store/run-export.js';
import type { Store } from '../../lib/store/store.js';
import { digits } from '../../lib/tasks/characters.js';

const shape = { dataset: digits.dataset({ size: 4, seed: 3 }), rewards: digits.rewards, task: 'digits', groupSize: 2, batchSize: 2, epochs: 6, maxNewTokens: 3, seed: 3, head: { rank: 2 } };
const RUN = 'g';

let policy: OnnxPolicy;
let base: string;
let exported: RunExport;
const dirs: string[] = [];
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: await bundledModelPath(), hiddenState: true });
  base = await tempDir();
  const store = await openFileStore(base);
  const controller = new AbortController();
  // Three of twelve steps committed, then stopped: an interrupted run a resume would finish.
  const run = gradientGrpo({ ...shape, policy, store, runId: RUN, signal: controller.signal });
  for await (const event of run) if (event.type === 'step-end' && event.step === 3) controller.abort();
  (await run.result()).trainer.dispose();
  exported = await exportRun(store, RUN);
  await store.close();
}, 120_000);
afterAll(async () => {
  await policy?.dispose();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'webgrpo-edits-'));
  dirs.push(dir);
  return dir;
}

/** A copy of the interrupted run's store folder; `old`: every record's checksums removed, as a store written before them. */
async function copy(old = false): Promise<string> {
  const dir = await tempDir();
  await cp(base, dir, { recursive: true });
  if (old) {
    for (const file of await jsonFiles(join(dir, 'runs', RUN))) {
      const strip = (value: unknown): unknown => {
        if (Array.isArray(value)) return value.map(strip);
        if (typeof value !== 'object' || value === null) return value;
        const { integrity: _checksums, ...rest } = value as Record<string, unknown>;
        return rest;
      };
      const value = JSON.parse(await readFile(file, 'utf8'));
      await writeFile(file, JSON.stringify(strip(value)));
    }
  }
  return dir;
}

async function jsonFiles(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).filter((name) => name.endsWith('.json')).map((name) => join(dir, name));
}

/** Every file of a store folder by path, with its text. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const files = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
  return Object.fromEntries(await Promise.all(files.map(async (e) => [join(e.parentPath, e.name), await readFile(join(e.parentPath, e.name), 'utf8')] as const)));
}

/** The fields these edits touch: a run record's config, a checkpoint's tensor. */
interface Edited {
  config: { epochs: number; batchSize: number };
  adapter: { a: string };
}

async function editJson(path: string, edit: (value: Edited) => void): Promise<void> {
  const value = JSON.parse(await readFile(path, 'utf8'));
  edit(value);
  await writeFile(path, JSON.stringify(value, null, 2));
}

/** A base64 tensor with one character in its middle replaced: same length, other numbers. */
const garbled = (text: string) => text.slice(0, text.length >> 1) + (text[text.length >> 1] === 'A' ? 'B' : 'A') + text.slice((text.length >> 1) + 1);

async function corruption(pending: Promise<unknown>): Promise<StoreCorruptError> {
  const error = await pending.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(StoreCorruptError);
  return error as StoreCorruptError;
}

function cli() {
  const out: string[] = [];
  const err: string[] = [];
  const io: TrainIo = {
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    interactive: false,
    interrupt: new AbortController().signal,
    loadModel: async () => loadOnnxPolicy({ model: await bundledModelPath(), hiddenState: true }),
  };
  return { io, out: () => out.join(''), err: () => err.join('') };
}

const adapterFile = (dir: string) => join(dir, 'runs', RUN, 'adapters', '000003.json');
const runFile = (dir: string) => join(dir, 'runs', RUN, 'run.json');
const stepFile = (dir: string) => join(dir, 'runs', RUN, 'steps', '000001.json');
const itemsFile = (dir: string) => join(dir, 'runs', RUN, 'items.json');

const edits: Array<{ name: string; old: boolean; file: (dir: string) => string; field: string | undefined; edit: (dir: string) => Promise<void> }> = [
  { name: 'config.epochs 6 -> 1', old: false, file: runFile, field: 'config.epochs', edit: (dir) => editJson(runFile(dir), (run) => (run.config.epochs = 1)) },
  { name: 'config.batchSize 2 -> 3', old: false, file: runFile, field: 'config.batchSize', edit: (dir) => editJson(runFile(dir), (run) => (run.config.batchSize = 3)) },
  { name: 'a garbled adapter tensor', old: false, file: adapterFile, field: 'adapter.a', edit: (dir) => editJson(adapterFile(dir), (c) => (c.adapter.a = garbled(c.adapter.a))) },
  { name: 'run.json deleted', old: false, file: runFile, field: undefined, edit: (dir) => rm(runFile(dir)) },
  // `jq 'del(.integrity) | …'`: removing the checksums must not hide the edit.
  { name: 'a step\'s integrity removed and a reward edited', old: false, file: stepFile, field: 'integrity', edit: (dir) => editJson(stepFile(dir), (step) => {
    const raw = step as unknown as { integrity?: unknown; items: Array<{ rollouts: Array<{ reward: number }> }> };
    delete raw.integrity;
    raw.items[0].rollouts[0].reward = 0.987654;
  }) },
  { name: 'run.json\'s integrity removed and config.epochs edited', old: false, file: runFile, field: 'integrity', edit: (dir) => editJson(runFile(dir), (run) => {
    delete (run as unknown as { integrity?: unknown }).integrity;
    run.config.epochs = 5;
  }) },
  { name: 'an item\'s integrity removed and its prompt edited', old: false, file: itemsFile, field: '[0].integrity', edit: (dir) => editJson(itemsFile(dir), (items) => {
    const raw = items as unknown as Array<{ integrity?: unknown; prompt?: string; messages?: Array<{ content: string }> }>;
    delete raw[0].integrity;
    if (typeof raw[0].prompt === 'string') raw[0].prompt += ' edited';
    else raw[0].messages![0].content += ' edited';
  }) },
  // Without checksums, the schedule and the checkpoint's own checks catch them.
  { name: 'config.epochs 6 -> 1, no checksums', old: true, file: (dir) => join(dir, 'runs', RUN, 'steps'), field: 'config.epochs', edit: (dir) => editJson(runFile(dir), (run) => (run.config.epochs = 1)) },
  { name: 'config.batchSize 2 -> 3, no checksums', old: true, file: (dir) => join(dir, 'runs', RUN, 'steps'), field: 'config.batchSize', edit: (dir) => editJson(runFile(dir), (run) => (run.config.batchSize = 3)) },
  { name: 'an adapter tensor cut short, no checksums', old: true, file: adapterFile, field: 'adapter.a', edit: (dir) => editJson(adapterFile(dir), (c) => (c.adapter.a = c.adapter.a.slice(8))) },
];

describe('a file store edited by hand', () => {
  it.each(edits)('$name: StoreCorruptError naming the file and the field; listed as damaged; no resume offered; nothing changed', async ({ old, file, field, edit }) => {
    const dir = await copy(old);
    await edit(dir);
    // A store written before checksums, edited, then sealed on its owner's word: the schedule and
    // the checkpoint's own checks still catch what the seal took as it was.
    if (old) await sealFolder(dir);
    const before = await snapshot(dir);
    const store = await openFileStore(dir);

    const error = await corruption(resumeGradientGrpo(RUN, { policy, rewards: shape.rewards, store }).result());
    expect(error.what).toContain(file(dir));
    expect(error.field).toBe(field);
    expect(error.message).toContain(file(dir));
    if (field) expect(error.message).toContain(field);
    expect(error.message).toMatch(/restore it from a backup or an export of run "g", or delete the run/);

    const damaged = await store.listDamaged();
    expect(damaged.map((d) => [d.runId, d.error.field])).toEqual([[RUN, field]]);
    expect(damaged[0].error.what).toContain(file(dir));
    const record = await store.getRun(RUN).catch(() => undefined);
    expect(record?.status ?? 'unreadable').not.toBe('completed');
    await store.close();

    const list = cli();
    expect(await trainCli(['--list', '--store', dir], list.io)).toBe(0);
    expect(list.out()).toMatch(new RegExp(`^g +\\S+ +\\S+ +\\S+ +damaged`, 'm'));
    expect(list.err()).toContain(file(dir));
    const resume = cli();
    expect(await trainCli(['--resume', RUN, '--store', dir], resume.io)).toBe(1);
    expect(resume.err()).toContain(file(dir));
    expect(resume.err()).not.toMatch(/resume with/i);

    // Nothing stored was repaired, rewritten or removed; a resume that read the run record records
    // its failure there (status and error), and only there.
    const after = await snapshot(dir);
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    for (const path of Object.keys(before)) if (path !== runFile(dir) || record === undefined) expect([path, after[path]]).toEqual([path, before[path]]);
    if (record) {
      const { status, error: message, updatedAt: _u, integrity: _i, ...kept } = JSON.parse(after[runFile(dir)]);
      const { status: _s, error: _e, updatedAt: _v, integrity: _j, ...was } = JSON.parse(before[runFile(dir)]);
      expect([status, typeof message, kept]).toEqual(['failed', 'string', was]);
    }
  }, 60_000);

  it('a damaged run is restored from its export (importRun with replace), and resumes to its end', async () => {
    for (const damage of [(dir: string) => rm(runFile(dir)), (dir: string) => editJson(adapterFile(dir), (c) => (c.adapter.a = garbled(c.adapter.a)))]) {
      const dir = await copy();
      await damage(dir);
      const store = await openFileStore(dir);
      expect((await store.listDamaged()).map((d) => d.runId)).toEqual([RUN]);
      await importRun(store, exported, { replace: true });
      expect(await store.listDamaged()).toEqual([]);
      const result = await resumeGradientGrpo(RUN, { policy, rewards: shape.rewards, store }).result();
      expect(result).toMatchObject({ status: 'completed', stepsCompleted: 12 });
      result.trainer.dispose();
      await store.close();
    }
  }, 120_000);

  it('an unedited copy lists whole and resumes to its end; without checksums, once its owner sealed it', async () => {
    for (const old of [false, true]) {
      const dir = await copy(old);
      if (old) {
        // Unverifiable until sealed: named as such, by the file and the missing key.
        const unsealed = await openFileStore(dir);
        const [damaged] = await unsealed.listDamaged();
        expect([damaged?.runId, damaged?.error.field]).toEqual([RUN, 'integrity']);
        expect(damaged.error.message).toMatch(/has no checksum .*--seal-unverified/);
        await unsealed.close();
        const seal = cli();
        expect(await trainCli(['--seal-unverified', '--store', dir], seal.io)).toBe(0);
        expect(seal.out()).toMatch(/^Sealed \d+ file\(s\)/);
      }
      const store = await openFileStore(dir);
      expect(await store.listDamaged()).toEqual([]);
      expect((await store.listRuns()).map((r) => r.id)).toEqual([RUN]);
      const result = await resumeGradientGrpo(RUN, { policy, rewards: shape.rewards, store }).result();
      expect(result).toMatchObject({ status: 'completed', stepsCompleted: 12 });
      result.trainer.dispose();
      await store.close();
    }
  }, 120_000);
});

describe('an IndexedDB store edited by hand', () => {
  let counter = 0;
  /** The interrupted run imported into a new database (written with checksums), the database's name. */
  async function database(): Promise<string> {
    const name = `edits-${counter++}`;
    const store = await openIdbStore({ name });
    await importRun(store, exported);
    await store.close();
    return name;
  }

  const damages: Array<[string, string, string | undefined, (db: Awaited<ReturnType<typeof openDB>>) => Promise<unknown>]> = [
    ['config.epochs 6 -> 1', 'the runs records ["g"]', 'config.epochs', async (db) => db.put('runs', edited(await db.get('runs', RUN), (r) => (r.config.epochs = 1)))],
    ['config.batchSize 2 -> 3', 'the runs records ["g"]', 'config.batchSize', async (db) => db.put('runs', edited(await db.get('runs', RUN), (r) => (r.config.batchSize = 3)))],
    ['a garbled adapter tensor', 'the adapters records ["g"]', 'adapter.a', async (db) => db.put('adapters', edited(await db.get('adapters', RUN), (c) => (c.adapter.a = garbled(c.adapter.a))))],
    ['the run record deleted', 'the runs records ["g"]', undefined, (db) => db.delete('runs', RUN)],
    // Deleting a record's checksums must not hide an edit of it: the record is unverifiable, damage of its own.
    ['the run record\'s integrity removed and config.epochs edited', 'the runs records ["g"]', 'integrity', async (db) => db.put('runs', unsealedEdit(await db.get('runs', RUN), (r) => (r.config.epochs = 5)))],
    ['a step\'s integrity removed and a reward edited', 'the steps record ["g",1]', 'integrity', async (db) => db.put('steps', unsealedEdit(await db.get('steps', [RUN, 1]), (s) => (s.items[0].rollouts[0].reward = 0.987654)))],
    ['an item\'s integrity removed', 'the items records ["g"]', '[0].integrity', async (db) => {
      const row = (await db.get('items', [RUN, 0])) as { item: Record<string, unknown> };
      delete row.item.integrity;
      return db.put('items', row);
    }],
    ['the checkpoint\'s integrity removed', 'the adapters records ["g"]', 'integrity', async (db) => db.put('adapters', unsealedEdit(await db.get('adapters', RUN), () => undefined))],
  ];

  it.each(damages)('%s: StoreCorruptError naming the record and the field, listed as damaged, the records kept', async (_name, record, field, damage) => {
    const name = await database();
    const raw = await openDB(name);
    await damage(raw);
    const before = await dump(raw);
    raw.close();
    const store: Store = await openIdbStore({ name });
    const [damaged] = await store.listDamaged();
    expect([damaged?.runId, damaged?.error.what, damaged?.error.field]).toEqual([RUN, `${record} in IndexedDB database "${name}"`, field]);
    if (field) {
      const error = await corruption(resumeGradientGrpo(RUN, { policy, rewards: shape.rewards, store }).result());
      expect([error.what, error.field]).toEqual([damaged.error.what, field]);
    }
    expect((await store.listRuns()).some((r) => r.id === RUN)).toBe(!record.includes('runs'));
    await store.close();
    const reopened = await openDB(name);
    const after = await dump(reopened);
    reopened.close();
    // Only the run's status and error may change, and only when its record reads (a resume that met a damaged checkpoint).
    const status = (rows: Record<string, unknown[]>) =>
      JSON.stringify({ ...rows, runs: rows.runs.map((row) => Object.fromEntries(Object.entries(row as object).filter(([key]) => !['status', 'error', 'updatedAt', 'integrity'].includes(key)))) });
    expect(status(after)).toBe(status(before));
  }, 60_000);

  it('a database written before checksums is damage until its owner seals it; reading changes nothing; an edit after the seal is found', async () => {
    const name = await database();
    const raw = await openDB(name);
    // Every checksum gone, as webgrpo before them wrote its records.
    for (const store of ['runs', 'steps', 'pending', 'adapters']) for (const row of await raw.getAll(store)) await raw.put(store, unsealedEdit(row, () => undefined));
    for (const row of (await raw.getAll('items')) as Array<{ item: Record<string, unknown> }>) {
      delete row.item.integrity;
      await raw.put('items', row);
    }
    const before = await dump(raw);
    raw.close();

    const unsealed = await openIdbStore({ name });
    const [damaged] = await unsealed.listDamaged();
    expect([damaged?.runId, damaged?.error.field]).toEqual([RUN, 'integrity']);
    expect(damaged.error.message).toMatch(/has no checksum .*sealUnverifiedIdb\(\{ name \}\) from webgrpo\/idb/);
    expect(await unsealed.listRuns()).toEqual([]);
    // Nothing writes over an unverified record (a status change would seal it silently).
    await expect(unsealed.setRunStatus(RUN, { status: 'failed' })).rejects.toBeInstanceOf(StoreCorruptError);
    await expect(corruption(resumeGradientGrpo(RUN, { policy, rewards: shape.rewards, store: unsealed }).result())).resolves.toMatchObject({ field: 'integrity' });
    await unsealed.close();
    const reopened = await openDB(name);
    expect(await dump(reopened)).toEqual(before);
    reopened.close();

    const sealedRows = await sealUnverified({ name });
    expect(sealedRows.length).toBe(Object.values(before).reduce((n, rows) => n + rows.length, 0));
    expect(sealedRows).toContain('steps ["g",1]');
    expect(await sealUnverified({ name })).toEqual([]);
    const store = await openIdbStore({ name });
    expect(await store.listDamaged()).toEqual([]);
    expect(comparable(await store.readBundle(RUN))).toEqual(comparable(await importedBundle()));
    await store.close();

    // The seal checks from then on: an edit is named by its field.
    const edit = await openDB(name);
    await edit.put('steps', edited(await edit.get('steps', [RUN, 2]), (s) => ((s as unknown as { epoch: number }).epoch = 7)));
    edit.close();
    const after = await openIdbStore({ name });
    expect((await after.listDamaged()).map((d) => [d.error.what, d.error.field])).toEqual([[`the steps record ["g",2] in IndexedDB database "${name}"`, 'epoch']]);
    await after.close();
  }, 60_000);
});

/** A bundle without its checksums or commit times: what a seal keeps. */
function comparable(bundle: unknown): unknown {
  return JSON.parse(JSON.stringify(bundle, (key, value: unknown) => (key === 'integrity' ? undefined : value)));
}

async function importedBundle(): Promise<unknown> {
  const memory = new MemoryStore();
  await importRun(memory, exported);
  return memory.readBundle(RUN);
}

/** The record without its checksums, then edited (`jq 'del(.integrity) | …'`). */
function unsealedEdit<T>(value: T, edit: (value: Edited & { items: Array<{ rollouts: Array<{ reward: number }> }> }) => void): T {
  delete (value as { integrity?: unknown }).integrity;
  edit(value as never);
  return value;
}

function edited<T>(value: T, edit: (value: Edited) => void): T {
  edit(value as unknown as Edited);
  return value;
}

async function dump(db: Awaited<ReturnType<typeof openDB>>): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const name of ['runs', 'items', 'steps', 'pending', 'adapters']) out[name] = await db.getAll(name);
  return out;
}
