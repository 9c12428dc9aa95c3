/**
 * File primitives of the Node stores (runs and session groups): JSON written atomically, read back
 * with a clear error when damaged, and Node's error codes mapped to our typed errors.
 */
import { randomUUID } from 'node:crypto';
import { dirname } from 'node:path';
import { link, mkdir, open, readdir, readFile, rename, rm, unlink } from 'node:fs/promises';
import { StoreError, StoreQuotaError, WebgrpoError } from '../errors.js';

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
export async function readJson<T>(path: string, remedy = 'restore it or delete the run'): Promise<T | undefined> {
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
    throw new StoreError(`${path} is not valid JSON (was it edited by hand?); ${remedy}.`, { cause: error });
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
