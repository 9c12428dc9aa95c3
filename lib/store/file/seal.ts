/**
 * `sealUnverified`: the explicit upgrade of a file store written before records carried checksums
 * (webgrpo up to file store schema 2 wrote some without them). Reading refuses a record without
 * checksums, since deleting the `integrity` key would otherwise hide any edit; whoever trusts the
 * store's files as they are says so by sealing them once, and every later edit is caught.
 *
 * Each record that lacks checksums (run.json, each item of items.json, steps/, pending/, adapters/,
 * and the groups of `serve --store`) is rewritten with them, atomically; records that have them, whatever they say, are left alone,
 * so a record edited since its seal stays damaged. Nothing else is read or checked: run it on a
 * store you trust, with no run training on it.
 */
import { join } from 'node:path';
import { readdir } from 'node:fs/promises';
import { INTEGRITY, sealed } from '../checksum.js';
import { guard, listJson, readJson, writeAtomic } from './io.js';
import { openStoreFolder } from './store.js';
import type { RecordLookup } from '../records/kind.js';

/** Seals the records without checksums in the store folder `root`; returns the files it rewrote. */
export async function sealUnverified(root: string, records: RecordLookup): Promise<string[]> {
  await openStoreFolder(root, records);
  return guard(`seal the records of the store in ${root}`, async () => {
    const runs = join(root, 'runs');
    const rewritten: string[] = [];
    for (const name of (await readdir(runs)).filter((n) => !n.startsWith('.'))) {
      const dir = join(runs, name);
      const files = [join(dir, 'run.json'), join(dir, 'items.json')];
      for (const folder of ['steps', 'pending', 'adapters']) files.push(...(await listJson(join(dir, folder))).map((file) => join(dir, folder, file)));
      for (const path of files) await sealFile(path, rewritten);
    }
    // The groups of `serve --store`.
    for (const file of await listJson(join(root, 'groups'))) await sealFile(join(root, 'groups', file), rewritten);
    return rewritten;
  });
}

/** Rewrites the file at `path` with checksums on every record that lacks them (adding it to `rewritten`). */
async function sealFile(path: string, rewritten: string[]): Promise<void> {
  // A file that does not parse stays as it is: reading it names it.
  const value = await readJson<unknown>(path).catch(() => undefined);
  const next = Array.isArray(value) ? value.map(seal) : seal(value);
  if (JSON.stringify(next) === JSON.stringify(value)) return;
  await writeAtomic(path, next);
  rewritten.push(path);
}

function seal(value: unknown): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(INTEGRITY in value) ? sealed(value) : value;
}
