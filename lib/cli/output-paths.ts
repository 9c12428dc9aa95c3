/**
 * `webgrpo train --out` and `--export-jsonl`, checked before anything trains: neither may lie inside
 * the store folder (writing there replaces the store's own files: a run record, store.json), the
 * two may not be one file (the run's JSON would replace the JSONL), and each must be a file whose
 * folder exists and can be written. Found after training, any of these lost the run's output.
 */
import { access, realpath, stat } from 'node:fs/promises';
import { constants } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { codeOf } from '../store/file/io.js';
import { UsageError } from './train-flags.js';

/** Resolves and checks the output paths given (`flag` to path); throws a UsageError naming the flag. */
export async function checkOutputPaths(outputs: Record<string, string | undefined>, storeRoot: string): Promise<void> {
  const store = await realpath(storeRoot);
  const seen = new Map<string, string>();
  for (const [flag, given] of Object.entries(outputs)) {
    if (given === undefined) continue;
    const path = resolve(given);
    const folder = dirname(path);
    let real: string;
    try {
      real = join(await realpath(folder), basename(path));
    } catch (error) {
      throw new UsageError(`--${flag} ${given}: its folder ${folder} does not exist (${codeOf(error) ?? 'unreadable'}); create it or choose another path.`);
    }
    const inside = relative(store, real);
    if (inside === '' || (!inside.startsWith('..') && !isAbsolute(inside))) {
      throw new UsageError(`--${flag} ${given} lies inside the store folder ${store}, where it would overwrite the store's own files; choose a path outside it.`);
    }
    const other = seen.get(real);
    if (other) throw new UsageError(`--${flag} and --${other} name the same file ${given}; give each its own file.`);
    seen.set(real, flag);
    if (await isFolder(real)) throw new UsageError(`--${flag} ${given} is a folder; give a file path.`);
    try {
      await access(dirname(real), constants.W_OK);
    } catch (error) {
      throw new UsageError(`--${flag} ${given}: its folder cannot be written (${codeOf(error) ?? 'unwritable'}); choose another path.`);
    }
  }
}

async function isFolder(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}
