/**
 * Sessions persisted in the real stores: one `SessionStore` contract for memory, IndexedDB
 * (fake-indexeddb here; the real one in session-store-browser.test.ts) and files, sessions that
 * reopen their groups, the IndexedDB migration from the previous schema, and quota failures.
 */
import 'fake-indexeddb/auto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDB } from 'idb';
import { afterAll, describe, expect, it } from 'vitest';
import { createSession, MemorySessionStore, StoreError, StoreQuotaError, type GroupRecord, type SessionStore } from '../../lib/index.js';
import { computeAdvantages } from '../../lib/math.js';
import { openIdbSessionStore, openIdbStore, sealUnverifiedIdb as sealDatabase } from '../../lib/idb.js';
import { openFileSessionStore, openFileStore, sealUnverified } from '../../lib/node.js';
import { MIGRATIONS, type WebgrpoDB } from '../../lib/store/idb/schema.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import { sampleItems, sampleRun } from '../tfgrpo/helpers/records.js';
import { methodRecords } from '../../lib/methods/records.js';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'webgrpo-session-store-'));
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

let dbCounter = 0;
interface Kind {
  name: string;
  /** A store, and a function that opens another on the same data (a restart). */
  open(): Promise<{ store: SessionStore; reopen: () => Promise<SessionStore> }>;
}
const kinds: Kind[] = [
  {
    name: 'memory',
    async open() {
      const store = new MemorySessionStore();
      return { store, reopen: async () => store };
    },
  },
  {
    name: 'indexeddb',
    async open() {
      const name = `sessions-${dbCounter++}`;
      return { store: await openIdbSessionStore({ name }), reopen: () => openIdbSessionStore({ name }) };
    },
  },
  {
    name: 'file',
    async open() {
      const dir = await tempDir();
      return { store: await openFileSessionStore(dir), reopen: () => openFileSessionStore(dir) };
    },
  },
];

function group(id: string, createdAt: number, text = 'a'): GroupRecord {
  return {
    id,
    createdAt,
    prompt: 'Sort: b a',
    promptText: 'Sort: b a',
    promptTokenIds: [1, 2, 3],
    model: 'toy',
    sampling: { temperature: 0.7, seed: 1 },
    completions: [
      { id: `${id}-0`, index: 0, source: 'policy', text, tokenIds: [4], logprobs: [-0.25], finishReason: 'eos' },
      { id: `${id}-1`, index: 1, source: 'policy', text: 'b', tokenIds: [5], logprobs: [-1.5], finishReason: 'length' },
    ],
  };
}

describe.each(kinds)('$name session store', (kind) => {
  it('puts, replaces, gets and lists groups oldest first; reads are copies', async () => {
    const { store, reopen } = await kind.open();
    const odd = 'Grp/../ä b.JSON';
    await store.put(group('g2', 2000));
    await store.put(group('g1', 1000));
    await store.put(group(odd, 3000));
    await store.put(group('G1', 1000, 'upper'));
    await store.put(group('g2', 2000, 'replaced'));
    expect(await store.get('nope')).toBeUndefined();
    expect(await store.get(odd)).toEqual(group(odd, 3000));
    const read = await store.get('g2');
    expect(read).toEqual(group('g2', 2000, 'replaced'));
    read!.completions[0].text = 'mutated';
    expect((await store.get('g2'))?.completions[0].text).toBe('replaced');
    // Oldest first; ids that differ only in case stay apart.
    const again = await reopen();
    const ids = (await again.list()).map((g) => g.id);
    if (kind.name === 'memory') expect(ids).toEqual(['g2', 'g1', odd, 'G1']);
    else expect(ids).toEqual(['G1', 'g1', 'g2', odd]);
    expect((await again.get('G1'))?.completions[0].text).toBe('upper');
    await again.flush?.();
  });

  it('keeps a session across a restart: groups, rewards and advantages come back and can be told again', async () => {
    const { store, reopen } = await kind.open();
    const session = createSession({ policy: createToyPolicy(), store });
    const asked = await session.ask({ prompt: 'Sort: c b a', n: 3, seed: 4, maxNewTokens: 8 });
    await session.tell({ groupId: asked.groupId, rewards: [1, 0, 0.5] });
    const untold = await session.ask({ messages: [{ role: 'user', content: 'hi' }], n: 2, maxNewTokens: 4 });
    await session.flush();

    const restarted = createSession({ policy: createToyPolicy(), store: await reopen() });
    const told = await restarted.group(asked.groupId);
    expect(told).toEqual(await session.group(asked.groupId));
    expect(told.completions.map((c) => c.advantage)).toEqual(computeAdvantages([1, 0, 0.5], { groupSize: 3 }).advantages);
    expect((await restarted.groups({ told: false })).map((g) => g.id)).toEqual([untold.groupId]);
    const retold = await restarted.tell({ groupId: asked.groupId, rewards: { [`${asked.groupId}-1`]: 1 } });
    expect(retold.rewards).toEqual([1, 1, 0.5]);
    expect((await (await reopen()).get(asked.groupId))?.completions[1].reward).toBe(1);
  });
});

describe('IndexedDB session store', () => {
  it('migrates a database of the previous schema (v2), keeping its runs', async () => {
    const name = `migrate-${dbCounter++}`;
    const v2 = await openDB<WebgrpoDB>(name, 2, { upgrade: (db, old, _new, tx) => MIGRATIONS.slice(old, 2).forEach((m) => m(db, tx, methodRecords)) });
    await v2.put('runs', sampleRun('old'));
    for (const [index, item] of sampleItems().entries()) await v2.put('items', { runId: 'old', index, item });
    expect([...v2.objectStoreNames]).not.toContain('groups');
    v2.close();

    const groups = await openIdbSessionStore({ name });
    await groups.put(group('g', 1));
    expect(await groups.list()).toEqual([group('g', 1)]);
    // Its runs were written before checksums: sealed on their owner's word before they read.
    expect((await sealDatabase({ name })).length).toBe(1 + sampleItems().length);
    const runs = await openIdbStore({ name });
    expect(await runs.getRun('old')).toEqual(sampleRun('old'));
    expect(await runs.getItems('old')).toEqual(sampleItems());
    await runs.close();
    await groups.close();
    const raw = await openDB(name);
    expect(raw.version).toBe(MIGRATIONS.length);
    expect([...raw.objectStoreNames].sort()).toEqual(['adapters', 'groups', 'items', 'leases', 'pending', 'runs', 'steps']);
    raw.close();
  });

  it('turns a full quota into StoreQuotaError and keeps the group as it was', async () => {
    const store = await openIdbSessionStore({ name: `quota-${dbCounter++}` });
    const session = createSession({ policy: createToyPolicy(), store });
    const { groupId } = await session.ask({ prompt: 'q', n: 2, maxNewTokens: 4 });
    const before = await store.get(groupId);

    // What a browser does when the origin is out of space: the request fails as it is made.
    const proto = (globalThis as unknown as { IDBObjectStore: { prototype: { put: (...a: unknown[]) => unknown } } }).IDBObjectStore.prototype;
    const put = proto.put;
    proto.put = () => {
      throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
    };
    try {
      const error = await session.tell({ groupId, rewards: [1, 0] }).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(StoreQuotaError);
      expect((error as StoreQuotaError).message).toMatch(/quota .* used up.*delete old runs or groups/);
    } finally {
      proto.put = put;
    }
    expect(await store.get(groupId)).toEqual(before);
    expect((await session.tell({ groupId, rewards: [1, 0] })).advantages).toHaveLength(2);
    await store.close();
    await expect(store.list()).rejects.toBeInstanceOf(StoreError);
  });
});

describe('IndexedDB session store checksums', () => {
  it('names an edited group, or one without checksums, as damaged without changing it, and serves an old one once its owner sealed the database', async () => {
    const name = `sessions-${dbCounter++}`;
    const store = await openIdbSessionStore({ name });
    await store.put(group('new', 1));
    const raw = await openDB(name);
    // As a version before checksums wrote it; and a sealed group edited by hand.
    await raw.put('groups', group('old', 2));
    const edited = (await raw.get('groups', 'new')) as GroupRecord & { integrity?: unknown };
    expect(edited.integrity).toBeDefined();
    edited.completions[0].text = 'edited';
    await raw.put('groups', edited);
    const before = await raw.getAll('groups');
    await expect(store.get('old')).rejects.toMatchObject({ code: 'StoreCorrupt', field: 'integrity', what: `the groups record "old" in IndexedDB database "${name}"`, message: expect.stringMatching(/has no checksum.*sealUnverifiedIdb\(\{ name \}\) from webgrpo\/idb/) });
    await expect(store.get('new')).rejects.toMatchObject({ code: 'StoreCorrupt', field: 'completions[0].text' });
    await expect(store.list()).rejects.toMatchObject({ code: 'StoreCorrupt' });
    // A tell of a damaged group changes nothing.
    await expect(createSession({ policy: createToyPolicy(), store }).tell({ groupId: 'old', rewards: [1, 0] })).rejects.toMatchObject({ code: 'StoreCorrupt' });
    expect(await raw.getAll('groups')).toEqual(before);
    raw.close();

    expect(await sealDatabase({ name })).toEqual(['groups "old"']);
    expect(await store.get('old')).toEqual(group('old', 2));
    await expect(store.get('new')).rejects.toMatchObject({ field: 'completions[0].text' });
    expect(await sealDatabase({ name })).toEqual([]);
    await store.close();
  });
});

describe('file session store', () => {
  it('shares the run store folder, ignores leftovers of a killed write and reports corrupt files', async () => {
    const dir = await tempDir();
    const runs = await openFileStore(dir);
    await runs.createRun(sampleRun('r'), sampleItems());
    const store = await openFileSessionStore(dir);
    await store.put(group('chatcmpl-abc', 1));
    expect((await readdir(dir)).sort()).toEqual(['groups', 'runs', 'store.json']);
    expect(await readdir(join(dir, 'groups'))).toEqual(['chatcmpl-abc.json']);
    expect(await runs.getRun('r')).toEqual(sampleRun('r'));

    await writeFile(join(dir, 'groups', 'chatcmpl-abc.json.999.x.tmp'), '{"half');
    expect((await store.list()).map((g) => g.id)).toEqual(['chatcmpl-abc']);
    await writeFile(join(dir, 'groups', 'chatcmpl-abc.json'), '{"edited by hand');
    await expect(store.get('chatcmpl-abc')).rejects.toThrow(/not valid JSON.*delete that file/);

    const foreign = await tempDir();
    await writeFile(join(foreign, 'notes.txt'), 'mine');
    await expect(openFileSessionStore(foreign)).rejects.toThrow(/not empty/);
    await expect(store.get('x'.repeat(300))).rejects.toThrow(/too long/);
  });

  it('names a group written without checksums as unverifiable, and serves it once its owner sealed the store', async () => {
    const dir = await tempDir();
    const store = await openFileSessionStore(dir);
    const path = join(dir, 'groups', 'old.json');
    // As a version before checksums wrote it.
    await mkdir(join(dir, 'groups'), { recursive: true });
    await writeFile(path, JSON.stringify(group('old', 1)));
    await expect(store.get('old')).rejects.toMatchObject({ code: 'StoreCorrupt', field: 'integrity', message: expect.stringMatching(/has no checksum/) });
    expect(await sealUnverified(dir)).toEqual([path]);
    expect(await store.get('old')).toEqual(group('old', 1));
    // Sealed, an edit is found.
    const sealed = JSON.parse(await readFile(path, 'utf8'));
    sealed.completions[0].text = 'edited';
    await writeFile(path, JSON.stringify(sealed));
    await expect(store.get('old')).rejects.toMatchObject({ code: 'StoreCorrupt', field: 'completions[0].text' });
    expect(await sealUnverified(dir)).toEqual([]);
  });
});
