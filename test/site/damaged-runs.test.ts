/**
 * Runs edited by hand in the browser's IndexedDB show as damaged in the playground's run list, on
 * the production build in headless Chromium: a run whose record was edited (`config.epochs`) gets a
 * row of its own naming the field, a run with an edited step keeps its row, marked damaged; picking
 * either says what is wrong and offers no resume; nothing is removed. A run stored without
 * checksums (as before webgrpo wrote them) is unverifiable until the user trusts it, which seals it.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportRun } from '../../lib/store/run-export.js';
import { openFileStore, sealUnverified } from '../../lib/node.js';
import { startPlayground, type Playground } from './preview.js';

let playground: Playground;
let page: Page;
let dir: string;
const exports: Record<string, string> = {};

const runs = () => page.locator('section[aria-labelledby="runs-title"]');

/**
 * Runs `body` in the page on one read-write transaction over `stores` of the playground's
 * database, as devtools or another script could, and resolves with what the function it returns
 * reads once the transaction has completed. `body` is sent as its source: it sees nothing of this file.
 */
async function inDatabase<T>(stores: string[], body: (tx: IDBTransaction) => () => T): Promise<T> {
  const run = (names: string[], work: (tx: IDBTransaction) => () => unknown) =>
    new Promise((resolve, reject) => {
      const open = indexedDB.open('webgrpo');
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const db = open.result;
        const tx = db.transaction(names, 'readwrite');
        const read = work(tx);
        tx.oncomplete = () => {
          db.close();
          resolve(read());
        };
        tx.onerror = () => reject(tx.error);
      };
    });
  return (await page.evaluate(`(${run})(${JSON.stringify(stores)}, ${body})`)) as T;
}

beforeAll(async () => {
  // Two training-free runs of the v5 fixtures, exported as the playground's Import reads them.
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-damaged-site-'));
  await cp(new URL('../fixtures/v5/file-store', import.meta.url).pathname, dir, { recursive: true });
  // Written before checksums: sealed on its owner's word before it can be read.
  await sealUnverified(dir);
  const store = await openFileStore(dir);
  for (const id of ['lessons', 'exemplars']) exports[id] = JSON.stringify(await exportRun(store, id));
  // A third run, the lessons run under another id: stored below without checksums, as an older webgrpo did.
  const old = JSON.parse(exports.lessons) as { run: { id: string } };
  old.run.id = 'old';
  exports.old = JSON.stringify(old);
  await store.close();
  playground = await startPlayground();
  page = await playground.context.newPage();
  await page.goto(playground.baseURL);
  await page.getByRole('heading', { name: 'No run yet' }).waitFor();
}, 180_000);

afterAll(async () => {
  await playground?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('damaged runs in the playground', { timeout: 120_000 }, () => {
  it('are listed as damaged, say what is wrong when picked, offer no resume, and stay stored', async () => {
    for (const id of ['lessons', 'exemplars']) {
      await page.getByLabel('Import a run exported as JSON').setInputFiles({ name: `${id}.json`, mimeType: 'application/json', buffer: Buffer.from(exports[id]) });
      await expect.poll(() => runs().locator('li').count()).toBe(id === 'lessons' ? 1 : 2);
    }
    expect(await runs().locator('.chip', { hasText: 'damaged' }).count()).toBe(0);

    // Edited by hand, as devtools or another script could: a run's epochs, and a number in a step.
    await inDatabase(['runs', 'steps'], (tx) => {
      const get = tx.objectStore('runs').get('lessons');
      get.onsuccess = () => tx.objectStore('runs').put({ ...get.result, config: { ...get.result.config, epochs: 2 } });
      const step = tx.objectStore('steps').get(['exemplars', 1]);
      step.onsuccess = () => tx.objectStore('steps').put({ ...step.result, stats: { ...step.result.stats, meanReward: 0.999 } });
      return () => undefined;
    });
    await page.reload();
    await expect.poll(() => runs().locator('.chip', { hasText: 'damaged' }).count()).toBe(2);
    expect(await runs().locator('li').count()).toBe(2);

    // The edited record: a row of its own, naming the field.
    const lost = runs().locator('li', { hasText: 'lessons' });
    expect(await lost.textContent()).toMatch(/config\.epochs/);
    // The edited step: the run's own row, marked; picked, it says what is wrong and offers no resume.
    const marked = runs().locator('li').filter({ hasNotText: 'lessons' });
    expect(await marked.locator('.chip').getAttribute('title')).toMatch(/the steps record \["exemplars",1\].*stats\.meanReward/);
    await marked.getByRole('button').click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toMatch(/Run exemplars cannot be read: .*stats\.meanReward/);
    expect(await page.getByRole('button', { name: 'Resume run' }).count()).toBe(0);

    // Still stored, as edited: nothing was repaired or deleted.
    const stored = await inDatabase(['steps'], (tx) => {
      const count = tx.objectStore('steps').count();
      return () => count.result;
    });
    expect(stored).toBe(3);
  });

  it('a run stored without checksums is unverifiable until the user trusts it; the edited runs stay damaged', async () => {
    await page.getByLabel('Import a run exported as JSON').setInputFiles({ name: 'old.json', mimeType: 'application/json', buffer: Buffer.from(exports.old) });
    await expect.poll(() => runs().locator('li').count()).toBe(3);
    expect(await page.getByRole('button', { name: /^Trust/ }).count()).toBe(0);
    // Every checksum of the run removed, as a webgrpo before them stored its records.
    await inDatabase(['runs', 'items', 'steps'], (tx) => {
      const range = IDBKeyRange.bound(['old'], ['old', []]);
      const strip = (name: string, query: IDBValidKey | IDBKeyRange, edit: (row: Record<string, unknown>) => void) => {
        const all = tx.objectStore(name).getAll(query);
        all.onsuccess = () => {
          for (const row of all.result as Array<Record<string, unknown>>) {
            edit(row);
            tx.objectStore(name).put(row);
          }
        };
      };
      strip('runs', 'old', (row) => delete row.integrity);
      strip('items', range, (row) => delete (row.item as Record<string, unknown>).integrity);
      strip('steps', range, (row) => delete row.integrity);
      return () => undefined;
    });
    await page.reload();
    await expect.poll(() => runs().locator('.chip', { hasText: 'damaged' }).count()).toBe(3);
    expect(await runs().locator('li', { hasText: 'old' }).textContent()).toMatch(/has no checksum/);
    const trust = page.getByRole('button', { name: 'Trust 1 unverified run' });
    await trust.click();
    // Sealed on the user's word: it reads again; the runs edited after their checksums were written stay damaged.
    await expect.poll(() => runs().locator('.chip', { hasText: 'damaged' }).count()).toBe(2);
    expect(await trust.count()).toBe(0);
    expect(await runs().locator('li').count()).toBe(3);
    expect(await runs().locator('li', { hasText: 'old' }).locator('.chip', { hasText: 'damaged' }).count()).toBe(0);
  });
});
