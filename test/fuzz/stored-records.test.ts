/**
 * The stored-record validators under mutated records: an imported run (`importRun`, through
 * `validateBundle`) and the files a resume reads back (through the store's integrity checks) are
 * taken or refused with a typed error, never a crash; a refused import leaves the stored run as it
 * was. Records are real (a run of the standard shape), mutated at random places in their trees.
 */
import 'fake-indexeddb/auto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  exportRun,
  importRun,
  InvalidInputError,
  MemoryStore,
  replayPolicy,
  resumeTrainingFreeGrpo,
  StoreCorruptError,
  trainingFreeGrpo,
  WebgrpoError,
  type TrainingFreeEvent,
} from '../../lib/index.js';
import { openDB } from 'idb';
import { openIdbStore } from '../../lib/idb.js';
import { openFileStore } from '../../lib/node.js';
import { recordReference, standardShape, type Reference } from '../tfgrpo/helpers/fixture.js';

type Tree = unknown;

const odd = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(null, undefined, 0, -1, 1.5, 1e308, '', 'x', [], {}, true, Number.NaN),
  fc.string({ maxLength: 12 }),
);

/** `value` with up to four edits at random places: replace a node, drop a key or item, duplicate one. */
function mutated(value: Tree) {
  return fc.array(fc.tuple(fc.array(fc.nat(), { minLength: 1, maxLength: 8 }), odd, fc.constantFrom('replace', 'drop', 'duplicate')), { minLength: 1, maxLength: 4 }).map((edits) => {
    const root = { value: structuredClone(value) } as Record<string, unknown>;
    for (const [path, replacement, how] of edits) {
      let parent: Record<string, unknown> | unknown[] = root;
      let key: string | number = 'value';
      for (const step of path) {
        const node: unknown = (parent as Record<string, unknown>)[key as string];
        if (node === null || typeof node !== 'object') break;
        const keys: (string | number)[] = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
        if (keys.length === 0) break;
        parent = node as Record<string, unknown>;
        key = keys[step % keys.length];
      }
      if (how === 'replace') (parent as Record<string, unknown>)[key as string] = replacement;
      else if (how === 'drop') {
        if (Array.isArray(parent)) parent.splice(key as number, 1);
        else delete parent[key as string];
      } else if (Array.isArray(parent)) parent.splice(key as number, 0, structuredClone(parent[key as number]));
    }
    return root.value;
  });
}

let reference: Reference;
let exported: Record<string, unknown>;
let dir: string;
beforeAll(async () => {
  reference = await recordReference(standardShape());
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-fuzz-records-'));
  const store = await openFileStore(join(dir, 'store'));
  const controller = new AbortController();
  const run = trainingFreeGrpo({ ...standardShape(), policy: replayPolicy(reference.recording), store, runId: 'r', signal: controller.signal });
  // Stopped in step 3 with one item of it finished: every kind of record is on disk.
  for await (const event of run as AsyncIterable<TrainingFreeEvent>) if (event.type === 'item-end' && event.step === 3) controller.abort();
  exported = (await exportRun(store, 'r')) as unknown as Record<string, unknown>;
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('importing mutated runs', () => {
  it('imports or refuses with InvalidInputError, and a refused import leaves the stored run as it was', async () => {
    const store = new MemoryStore();
    await importRun(store, exported, { runId: 'kept' });
    const before = JSON.stringify(await store.readBundle('kept'));
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(mutated(exported), async (document) => {
        const error = await importRun(store, document, { runId: 'kept', replace: true }).then(() => undefined, (e: unknown) => e);
        if (error === undefined) {
          // Accepted: it is a whole run again; put the original back for the next try.
          await importRun(store, exported, { runId: 'kept', replace: true });
          return;
        }
        refused++;
        expect(error).toBeInstanceOf(InvalidInputError);
        expect(JSON.stringify(await store.readBundle('kept'))).toBe(before);
      }),
      { numRuns: 400, seed: 15 },
    );
    expect(refused).toBeGreaterThan(100);
  });
});

describe('reading mutated store files back', () => {
  const files = ['runs/r/run.json', 'runs/r/items.json', 'runs/r/steps/000001.json', 'runs/r/steps/000002.json', 'runs/r/pending/000003-0000.json'];

  it('every read a resume makes returns or throws StoreCorruptError (or NotFound for a renamed run), never a TypeError', async () => {
    const originals = Object.fromEntries(await Promise.all(files.map(async (f) => [f, JSON.parse(await readFile(join(dir, 'store', f), 'utf8'))] as const)));
    const work = join(dir, 'work');
    await cp(join(dir, 'store'), work, { recursive: true });
    const store = await openFileStore(work);
    let corrupt = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...files).chain((file) => fc.tuple(fc.constant(file), mutated(originals[file]))),
        async ([file, value]) => {
          await writeFile(join(work, file), JSON.stringify(value) ?? '');
          try {
            for (const read of [
              () => store.getRun('r'),
              () => store.getItems('r'),
              () => store.listSteps('r'),
              () => store.lastStep('r'),
              () => store.getItemResults('r', 3),
              () => store.readBundle('r'),
            ]) {
              const error = await read().then(() => undefined, (e: unknown) => e);
              if (error === undefined) continue;
              expect([file, (error as Error).name, (error as Error).message]).toEqual([file, expect.stringMatching(/^(StoreCorruptError|NotFoundError)$/), expect.any(String)]);
              if (error instanceof StoreCorruptError) {
                corrupt++;
                expect(error.what).toContain(work);
              }
            }
          } finally {
            await writeFile(join(work, file), JSON.stringify(originals[file]));
          }
        },
      ),
      { numRuns: 250, seed: 16 },
    );
    expect(corrupt).toBeGreaterThan(50);
  });

  it('a resume over a mutated file completes or stops with a typed error, never a TypeError', async () => {
    const originals = Object.fromEntries(await Promise.all(files.map(async (f) => [f, JSON.parse(await readFile(join(dir, 'store', f), 'utf8'))] as const)));
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...files).chain((file) => fc.tuple(fc.constant(file), mutated(originals[file]))),
        async ([file, value]) => {
          const work = join(dir, `resume-${run++}`);
          await cp(join(dir, 'store'), work, { recursive: true });
          await writeFile(join(work, file), JSON.stringify(value) ?? '');
          const store = await openFileStore(work);
          const resumed = resumeTrainingFreeGrpo('r', { policy: replayPolicy(reference.recording), rewards: standardShape().rewards, store });
          const error = await resumed.result().then(() => undefined, (e: unknown) => e);
          if (error !== undefined) expect([file, error instanceof WebgrpoError ? 'typed' : String((error as Error).stack)]).toEqual([file, 'typed']);
          await rm(work, { recursive: true, force: true });
        },
      ),
      { numRuns: 40, seed: 17 },
    );
  });

  it('in IndexedDB too: reads over a mutated record return or throw StoreCorruptError, never a TypeError', async () => {
    const name = 'fuzz-records';
    const idb = await openIdbStore({ name });
    await importRun(idb, exported, { runId: 'r' });
    await idb.close();
    const raw = await openDB(name);
    const keys: [string, IDBValidKey][] = [
      ['runs', 'r'],
      ['items', ['r', 0]],
      ['steps', ['r', 1]],
      ['steps', ['r', 2]],
      ['pending', (await raw.getAllKeys('pending'))[0]],
    ];
    const originals = await Promise.all(keys.map(([objectStore, key]) => raw.get(objectStore, key)));
    const store = await openIdbStore({ name });
    let corrupt = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: keys.length - 1 }).chain((i) => fc.tuple(fc.constant(i), mutated(originals[i]))),
        async ([i, value]) => {
          const [objectStore] = keys[i];
          // Keep the record's key, so the mutation lands on this record and not beside it.
          const row = value !== null && typeof value === 'object' && !Array.isArray(value) ? { ...(value as object), ...keyFields(objectStore, originals[i]) } : value;
          const put = await raw.put(objectStore, row).then(() => true, () => false);
          if (!put) return;
          try {
            for (const read of [() => store.getRun('r'), () => store.getItems('r'), () => store.listSteps('r'), () => store.lastStep('r'), () => store.getItemResults('r', 3), () => store.readBundle('r')]) {
              const error = await read().then(() => undefined, (e: unknown) => e);
              if (error === undefined) continue;
              expect([objectStore, (error as Error).name, (error as Error).message]).toEqual([objectStore, expect.stringMatching(/^(StoreCorruptError|NotFoundError)$/), expect.any(String)]);
              if (error instanceof StoreCorruptError) corrupt++;
            }
          } finally {
            await raw.put(objectStore, originals[i]);
          }
        },
      ),
      { numRuns: 200, seed: 18 },
    );
    raw.close();
    await store.close();
    expect(corrupt).toBeGreaterThan(50);
  });
});

/** The fields an IndexedDB row's key is made of. */
function keyFields(objectStore: string, original: Record<string, unknown>): Record<string, unknown> {
  const fields: Record<string, string[]> = { runs: ['id'], items: ['runId', 'index'], steps: ['runId', 'step'], pending: ['runId', 'step', 'position'] };
  return Object.fromEntries(fields[objectStore].map((f) => [f, original[f]]));
}

