/**
 * Each entry of the package stays the size it was cut to: the core (`webgrpo`) carries what a user
 * of the loops calls, at most 60 runtime names; building a method, the maths, the tasks and each
 * backend have their own subpath, each within its own budget. Every name an entry exports is
 * there at run time (no `export` of something that resolves to undefined), and no runtime name is
 * exported by two entries, so each has one place to be imported from.
 */
import { describe, expect, it } from 'vitest';

const ENTRIES: Record<string, { load: () => Promise<Record<string, unknown>>; budget: number }> = {
  webgrpo: { load: () => import('../../lib/index.js'), budget: 60 },
  'webgrpo/method': { load: () => import('../../lib/method.js'), budget: 60 },
  'webgrpo/math': { load: () => import('../../lib/math.js'), budget: 30 },
  'webgrpo/tasks': { load: () => import('../../lib/tasks.js'), budget: 25 },
  'webgrpo/grad': { load: () => import('../../lib/grad.js'), budget: 30 },
  'webgrpo/onnx': { load: () => import('../../lib/onnx.js'), budget: 12 },
  'webgrpo/idb': { load: () => import('../../lib/idb.js'), budget: 8 },
  'webgrpo/openai': { load: () => import('../../lib/openai.js'), budget: 4 },
  'webgrpo/server': { load: () => import('../../lib/server.js'), budget: 4 },
  'webgrpo/node': { load: () => import('../../lib/node.js'), budget: 10 },
  'webgrpo/parquet': { load: () => import('../../lib/parquet.js'), budget: 4 },
};

describe('the entries of the package', () => {
  it.each(Object.keys(ENTRIES))('%s stays within its budget of runtime names, each of them defined', async (entry) => {
    const module = await ENTRIES[entry].load();
    const names = Object.keys(module);
    expect(names.length).toBeGreaterThan(0);
    expect(names.length, `${entry} exports ${names.length} runtime names: ${names.sort().join(', ')}`).toBeLessThanOrEqual(ENTRIES[entry].budget);
    expect(names.filter((name) => module[name] === undefined)).toEqual([]);
  });

  it('exports each runtime name from one entry only', async () => {
    const where = new Map<string, string[]>();
    for (const [entry, { load }] of Object.entries(ENTRIES)) {
      for (const name of Object.keys(await load())) where.set(name, [...(where.get(name) ?? []), entry]);
    }
    expect([...where].filter(([, entries]) => entries.length > 1)).toEqual([]);
  });
});
