/**
 * File primitives of the Node stores (runs and session groups): JSON written atomically, read back
 * with a clear error when damaged, and Node's error codes mapped to our typed errors.
 */
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { link, mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { StoreCorruptError, StoreError, StoreQuotaError, WebgrpoError } from '../../errors.js';

/**
 * Writes JSON to a temporary file, flushes it, then renames it over `path` (or, with `exclusive`,
 * hard-links it, which fails with EEXIST if `path` exists). Readers see the old file or the new one.
 */
export async function writeAtomic(path: string, value: unknown, options: { exclusive?: boolean } = {}): Promise<void> {
  const temp = `${path}.${process.pid}.${randomUUID()}.tmp`;
  await mkdir(dirname(path), { recursive: true });
  try {
    const handle = await open(temp, 'wx');
    try {
      await handle.writeFile(JSON.stringify(value));
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.exclusive) {
      await link(temp, path);
      await unlink(temp);
    } else {
      await rename(temp, path);
    }
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** The parsed file, or undefined if it does not exist. `remedy` ends the message for a damaged one. */
export async function readJson<T>(path: string, remedy = 'restore it from a backup or an export of the run, or delete the run and start it again'): Promise<T | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR') return undefined;
    throw error;
  }
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new StoreCorruptError(path, `${path} is not valid JSON (was it edited by hand, or cut short?); ${remedy}.`, { cause: error });
  }
}

/** `writeAtomic`'s temporary names: `<file>.<pid>.<uuid>.tmp`. */
const TEMPORARY = /\.(\d+)\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp$/;

/**
 * Removes the temporary files a killed writer left in the store folder (the root, `groups/`, each
 * run's folder and its `steps/`, `pending/`, `adapters/`), the run folders a killed import or
 * create was building, and the `.trash-*` folders of interrupted deletes. What a live process
 * (this one, or another writing now) is writing stays.
 */
export async function removeStaleTemporaries(root: string): Promise<void> {
  const runs = join(root, 'runs');
  const runDirs = (await entries(runs)).filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => join(runs, e.name));
  const dirs = [root, join(root, 'groups'), ...runDirs.flatMap((dir) => [dir, join(dir, 'steps'), join(dir, 'pending'), join(dir, 'adapters')])];
  for (const dir of dirs) {
    for (const entry of await entries(dir)) {
      const match = TEMPORARY.exec(entry.name);
      if (entry.isFile() && match && !processAlive(Number(match[1]))) await rm(join(dir, entry.name), { force: true });
    }
  }
  for (const entry of await entries(runs)) {
    if (!entry.isDirectory()) continue;
    // `.new-<pid>-...`: a run folder being built, renamed into place once whole.
    const building = /^\.new-(\d+)-/.exec(entry.name);
    if (entry.name.startsWith('.trash-') || (building && !processAlive(Number(building[1])))) {
      await rm(join(runs, entry.name), { recursive: true, force: true });
    }
  }
}

async function entries(dir: string) {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR') return [];
    throw error;
  }
}

/** Whether a process with this id runs on this machine (one we may not signal still runs). */
export function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return codeOf(error) === 'EPERM';
  }
}

/** Names of the `.json` files in `dir` (none if it does not exist); temporary files are left out. */
export async function listJson(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((name) => name.endsWith('.json'));
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return [];
    throw error;
  }
}

export function codeOf(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? ((error as { code?: unknown }).code as string | undefined) : undefined;
}

/** Our typed errors pass through; a full disk becomes `StoreQuotaError`; the rest `StoreError`. */
export async function guard<T>(what: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof WebgrpoError) throw error;
    const code = codeOf(error);
    if (code === 'ENOSPC' || code === 'EDQUOT') {
      throw new StoreQuotaError(`Could not ${what}: the disk is full (${code}). Nothing of this write was kept; free space and try again.`, {
        cause: error,
      });
    }
    throw new StoreError(`Could not ${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/** Whether `path` is a folder (false where nothing, or a file, is there). */
export async function isFolder(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch (error) {
    if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR') return false;
    throw error;
  }
}

/** Run ids become folder names: keep them to a safe alphabet. */
export function checkRunFolderName(runId: string): void {
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/.test(runId)) {
    throw new StoreError(`Run id "${runId}" cannot be a folder name; use letters, digits, ".", "_" and "-" (at most 128).`);
  }
}
