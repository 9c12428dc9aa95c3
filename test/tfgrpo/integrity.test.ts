/**
 * A damaged store never resumes "successfully": missing or emptied datasets, gaps in the steps,
 * records of the wrong shape and pending items of a step that cannot be in progress are a
 * `StoreCorruptError` naming the file (or IndexedDB record) and what to do, in the file store and
 * in IndexedDB; a run is never marked completed with steps missing; stale temporary files go on open.
 */
import 'fake-indexeddb/auto';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDB } from 'idb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as trainCli, type TrainIo } from '../../lib/cli/train.js';
import { replayPolicy, resumeTrainingFreeGrpo, StoreCorruptError, trainingFreeGrpo, type Store, type TrainingFreeEvent } from '../../lib/index.js';
import { openIdbStore } from '../../lib/idb.js';
import { openFileStore } from '../../lib/node.js';
import type { RunRecord } from '../../lib/index.js';
import { recordReference, standardShape, type Reference } from './helpers/fixture.js';
import { sampleItems, sampleRun, sampleStep } from './helpers/records.js';

let reference: Reference;
let base: string;
const dirs: string[] = [];
beforeAll(async () => {
  reference = await recordReference(standardShape());
  base = await mkdtemp(join(tmpdir(), 'webgrpo-integrity-'));
  dirs.push(base);
  // Steps 1-3 of 4 committed, then stopped: the run a resume would finish.
  const store = await openFileStore(join(base, 'store'));
  await runUntil(store, 3);
});
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** Runs the standard shape on `store` until `steps` steps are committed, then stops it. */
async function runUntil(store: Store, steps: number): Promise<void> {
  const controller = new AbortController();
  const run = trainingFreeGrpo({ ...standardShape(), policy: replayPolicy(reference.recording), store, runId: 'r', signal: controller.signal });
  for await (const event of run as AsyncIterable<TrainingFreeEvent>) if (event.type === 'step-end' && event.step === steps) controller.abort();
}

function resume(store: Store) {
  return resumeTrainingFreeGrpo('r', { policy: replayPolicy(reference.recording), rewards: standardShape().rewards, store }).result();
}

/** A copy of the stopped run's store folder, to damage. */
async function copy(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'webgrpo-damaged-'));
  dirs.push(dir);
  await cp(join(base, 'store'), dir, { recursive: true });
  return dir;
}

async function expectCorrupt(pending: Promise<unknown>, file: string, problem: RegExp): Promise<StoreCorruptError> {
  const error = await pending.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(StoreCorruptError);
  const corrupt = error as StoreCorruptError;
  expect(corrupt.code).toBe('StoreCorrupt');
  expect(corrupt.what).toContain(file);
  expect(corrupt.message).toMatch(problem);
  expect(corrupt.message).toMatch(/restore it from a backup or an export of (run "r"|the run), or delete the run/);
  return corrupt;
}

describe('the file store on resume', () => {
  const damages: [string, string, (dir: string) => Promise<void>, RegExp][] = [
    ['items.json deleted', 'items.json', (dir) => rm(join(dir, 'runs/r/items.json')), /is missing/],
    ['items.json emptied', 'items.json', (dir) => writeFile(join(dir, 'runs/r/items.json'), ''), /not valid JSON/],
    ['items.json an empty list', 'items.json', (dir) => writeFile(join(dir, 'runs/r/items.json'), '[]'), /has 0 items but the run has 6/],
    ['a middle step deleted', 'runs/r/steps', (dir) => rm(join(dir, 'runs/r/steps/000002.json')), /lack step 2 \(step 3 follows step 1\)/],
    ['the first step deleted', 'runs/r/steps', (dir) => rm(join(dir, 'runs/r/steps/000001.json')), /lack step 1/],
    ['a step file of {}', 'steps/000003.json', (dir) => writeFile(join(dir, 'runs/r/steps/000003.json'), '{}'), /holds step undefined, not step 3/],
    ['a step that is a list', 'steps/000003.json', (dir) => writeFile(join(dir, 'runs/r/steps/000003.json'), '[1, 2]'), /is not a step record/],
    [
      'a library of the wrong shape',
      'steps/000003.json',
      async (dir) => {
        const path = join(dir, 'runs/r/steps/000003.json');
        const step = JSON.parse(await readFile(path, 'utf8'));
        await writeFile(path, JSON.stringify({ ...step, payload: { ...step.payload, library: { entries: 'lots' } } }));
      },
      /\(payload\) is not a training-free step payload \(payload\.library/,
    ],
    [
      'a run record without its initial library',
      'run.json',
      async (dir) => {
        const path = join(dir, 'runs/r/run.json');
        const { initialLibrary: _dropped, ...rest } = JSON.parse(await readFile(path, 'utf8'));
        await writeFile(path, JSON.stringify(rest));
      },
      /initialLibrary\) is not an experience library/,
    ],
    [
      'a pending item of another step',
      'pending/000004-0000.json',
      async (dir) => {
        const step = JSON.parse(await readFile(join(dir, 'runs/r/steps/000003.json'), 'utf8'));
        await writeFile(join(dir, 'runs/r/pending/000004-0000.json'), JSON.stringify({ ...step.items[0], step: 9 }));
      },
      /is an item of step 9, but the last committed step is 3/,
    ],
  ];

  it.each(damages)('%s: StoreCorruptError naming the file, and the run is not completed', async (_name, file, damage, problem) => {
    const dir = await copy();
    await damage(dir);
    const store = await openFileStore(dir);
    await expectCorrupt(resume(store), file, problem);
    const run = await store.getRun('r').catch(() => undefined);
    if (run) expect(run.status).not.toBe('completed');
    // Nothing was committed past the damage.
    const names = await readdir(join(dir, 'runs/r/steps'));
    expect(names.filter((n) => n.endsWith('.json')).every((n) => n <= '000003.json')).toBe(true);
  });

  it('an undamaged copy resumes to the reference library, so the damage is what fails', async () => {
    const store = await openFileStore(await copy());
    const result = await resume(store);
    expect(result.status).toBe('completed');
    expect(JSON.stringify(result.library)).toBe(reference.libraryJson);
  });

  it('exports (readBundle) refuse pending items of a step that cannot be in progress, and skip leftovers of committed ones', async () => {
    const dir = await copy();
    const step = JSON.parse(await readFile(join(dir, 'runs/r/steps/000003.json'), 'utf8'));
    // A kill between a commit and the removal of its pending files leaves these: already in step 3.
    await writeFile(join(dir, 'runs/r/pending/000003-0000.json'), JSON.stringify(step.items[0]));
    const store = await openFileStore(dir);
    expect((await store.readBundle('r')).pending).toEqual([]);
    await writeFile(join(dir, 'runs/r/pending/000009-0000.json'), JSON.stringify({ ...step.items[0], step: 9 }));
    await expectCorrupt(store.readBundle('r'), 'pending/000009-0000.json', /is an item of step 9, but the last committed step is 3/);
  });

  it('refuses to mark a run completed with steps missing', async () => {
    const store = await openFileStore(await copy());
    await expectCorrupt(store.setRunStatus('r', { status: 'completed' }), 'runs/r/steps', /holds 3 of the run's 4 steps/);
    expect((await store.getRun('r'))?.status).toBe('aborted');
  });

  it('webgrpo train: --resume fails with the file named and no resume hint; --list marks the run damaged', async () => {
    const dir = await copy();
    await rm(join(dir, 'runs/r/steps/000002.json'));
    const err: string[] = [];
    const out: string[] = [];
    const io: TrainIo = {
      stdout: (t) => out.push(t),
      stderr: (t) => err.push(t),
      interactive: false,
      interrupt: new AbortController().signal,
      loadModel: async () => replayPolicy(reference.recording),
    };
    expect(await trainCli(['--resume', 'r', '--store', dir], io)).toBe(1);
    expect(err.join('')).toContain(join(dir, 'runs/r/steps'));
    expect(err.join('')).toMatch(/lack step 2/);
    expect(err.join('')).not.toMatch(/resume with/);
    out.length = 0;
    err.length = 0;
    expect(await trainCli(['--list', '--store', dir], io)).toBe(0);
    expect(out.join('')).toMatch(/r +\w+ +alphabetise +lessons +damaged\/4/);
    expect(err.join('')).toMatch(/lack step 2/);
  });
});

describe('stale temporary files', () => {
  it('are removed on open when their writer is gone; a live writer keeps its own', async () => {
    const dir = await copy();
    const dead = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString());
    const stale = [
      join(dir, 'runs/r/steps', `000004.json.${dead}.${randomUUID()}.tmp`),
      join(dir, 'runs/r/pending', `000004-0001.json.${dead}.${randomUUID()}.tmp`),
      join(dir, 'runs/r', `run.json.${dead}.${randomUUID()}.tmp`),
      join(dir, `store.json.${dead}.${randomUUID()}.tmp`),
    ];
    const live = join(dir, 'runs/r/steps', `000004.json.${process.pid}.${randomUUID()}.tmp`);
    for (const path of [...stale, live]) await writeFile(path, '{"half');
    await writeFile(join(dir, 'runs/r/notes.tmp'), 'not ours');
    await openFileStore(dir);
    for (const path of stale) await expect(readFile(path)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(live, 'utf8')).toBe('{"half');
    expect(await readFile(join(dir, 'runs/r/notes.tmp'), 'utf8')).toBe('not ours');
    // The store still resumes to the reference.
    expect(JSON.stringify((await resume(await openFileStore(dir))).library)).toBe(reference.libraryJson);
  });
});

describe('the IndexedDB store on resume', () => {
  let counter = 0;
  async function stoppedRun(): Promise<string> {
    const name = `integrity-${counter++}`;
    const store = await openIdbStore({ name });
    await runUntil(store, 3);
    await store.close();
    return name;
  }

  const damages: [string, (db: Awaited<ReturnType<typeof openDB>>) => Promise<unknown>, RegExp, RegExp][] = [
    ['a middle step deleted', (db) => db.delete('steps', ['r', 2]), /the steps records \["r"\]/, /lack step 2/],
    ['a dataset item deleted', (db) => db.delete('items', ['r', 4]), /the items records \["r"\]/, /lack item 4/],
    ['every dataset item deleted', (db) => db.delete('items', IDBKeyRange.bound(['r'], ['r', []])), /the items records \["r"\]/, /is missing/],
    ['a step record of {}', (db) => db.put('steps', { runId: 'r', step: 3 }), /the steps record \["r",3\]/, /has no epoch or batch number/],
    [
      'a library of the wrong shape',
      async (db) => {
        const step = (await db.get('steps', ['r', 3]))!;
        await db.put('steps', { ...step, payload: { ...step.payload, library: [] } });
      },
      /the steps record \["r",3\]/,
      /is not a training-free step payload \(payload\.library/,
    ],
  ];

  it.each(damages)('%s (deleted through idb, then reopened): StoreCorruptError naming the record', async (_name, damage, record, problem) => {
    const name = await stoppedRun();
    const raw = await openDB(name);
    await damage(raw);
    raw.close();
    const store = await openIdbStore({ name });
    try {
      const error = await expectCorrupt(resume(store), 'IndexedDB', problem);
      expect(error.what).toMatch(record);
      expect(error.what).toContain(`"${name}"`);
      expect((await store.getRun('r'))?.status).not.toBe('completed');
      await expect(store.setRunStatus('r', { status: 'completed' })).rejects.toBeInstanceOf(StoreCorruptError);
    } finally {
      await store.close();
    }
  });

  it('an undamaged database resumes to the reference library', async () => {
    const store = await openIdbStore({ name: await stoppedRun() });
    try {
      expect(JSON.stringify((await resume(store)).library)).toBe(reference.libraryJson);
    } finally {
      await store.close();
    }
  });
});

describe('a gradient run without the checkpoint of its last step', () => {
  it('is corrupt in both stores: a resume would restart the adapter from scratch', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'webgrpo-adapter-'));
    dirs.push(dir);
    const run = { ...sampleRun('g'), kind: 'gradient' } as unknown as RunRecord;
    for (const store of [await openFileStore(dir), await openIdbStore({ name: 'integrity-adapter' })]) {
      await store.createRun(run, sampleItems());
      expect(await store.getAdapter('g')).toBeUndefined();
      // Committed without its checkpoint, as a store written by hand or a lost file would hold it.
      await store.commitStep('g', sampleStep(1));
      const error = await store.getAdapter('g').then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(StoreCorruptError);
      expect((error as Error).message).toMatch(/step 1 (of run "g" )?was committed with (it|its checkpoint)/);
      await store.close();
    }
  });
});

