/**
 * The API tour's list of each entry's public surface (docs/api-tour.md, "What each entry exports")
 * is the real one: every value an entry exports is listed, and everything listed is exported.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

const ENTRIES: Record<string, () => Promise<Record<string, unknown>>> = {
  webgrpo: () => import('../../lib/index.js'),
  'webgrpo/method': () => import('../../lib/method.js'),
  'webgrpo/math': () => import('../../lib/math.js'),
  'webgrpo/tasks': () => import('../../lib/tasks.js'),
  'webgrpo/onnx': () => import('../../lib/onnx.js'),
  'webgrpo/idb': () => import('../../lib/idb.js'),
  'webgrpo/openai': () => import('../../lib/openai.js'),
  'webgrpo/server': () => import('../../lib/server.js'),
  'webgrpo/node': () => import('../../lib/node.js'),
  'webgrpo/grad': () => import('../../lib/grad.js'),
  'webgrpo/parquet': () => import('../../lib/parquet.js'),
};

async function listed(): Promise<Map<string, string[]>> {
  const tour = await readFile(new URL('../../docs/api-tour.md', import.meta.url), 'utf8');
  const lists = new Map<string, string[]>();
  for (const match of tour.matchAll(/<!-- api: (\S+) -->([\s\S]*?)<!-- \/api -->/g)) {
    lists.set(match[1], [...match[2].matchAll(/`([A-Za-z_$][\w$]*)`/g)].map((m) => m[1]).sort());
  }
  return lists;
}

describe('the public API in docs/api-tour.md', () => {
  it('lists every entry', async () => {
    expect([...(await listed()).keys()].sort()).toEqual(Object.keys(ENTRIES).sort());
  });

  it.each(Object.keys(ENTRIES))('%s exports exactly what the API tour lists', async (entry) => {
    const names = (await listed()).get(entry);
    const exported = Object.keys(await ENTRIES[entry]()).sort();
    expect(names).toEqual(exported);
  });

  it("webgrpo/onnx's browser build exports what its Node build does", async () => {
    const node = Object.keys(await import('../../lib/onnx.js')).sort();
    expect(Object.keys(await import('../../lib/onnx.browser.js')).sort()).toEqual(node);
  });
});
