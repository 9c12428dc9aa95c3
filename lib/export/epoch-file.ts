/**
 * Node side of the export after every epoch: a JSONL file appended epoch by epoch that a killed
 * and resumed run completes without duplicates. On open, a line cut short by a kill is dropped,
 * the completion ids already in the file are read, and (when resuming) the epochs the store
 * finished are written where lines are missing.
 */
import { readFile, truncate } from 'node:fs/promises';
import { codeOf } from '../store/file/io.js';
import type { Store } from '../store/store.js';
import { exportEveryEpoch, finishedEpochs, type EpochExportOptions } from './epoch.js';
import type { EpochHook } from '../run/groups.js';
import { jsonlFileSink, type JsonlFileSink } from './file.js';
import { COLUMN_NAMES } from './jsonl.js';

export interface EpochExportFile {
  sink: JsonlFileSink;
  /** The loop's `onEpoch`. */
  hook: EpochHook;
  /** Lines appended so far (catch-up included). */
  lines(): number;
}

/**
 * Opens `path` for the epochs of a run. With `resume`, epochs the stored run finished are
 * written first wherever their lines are missing (a crash between the commit and the append).
 * Lines need their completion ids to be matched: `include` gets `completionId` if it lacks it.
 */
export async function openEpochExport(path: string, options: Omit<EpochExportOptions, 'written'> = {}, resume?: { store: Store; runId: string }): Promise<EpochExportFile> {
  const written = await writtenIds(path);
  const include = options.include?.includes('completionId') ? options.include : [...(options.include ?? []), 'completionId' as const];
  const sink = jsonlFileSink(path);
  const append = exportEveryEpoch(sink, { ...options, include, written });
  let lines = 0;
  const hook: EpochHook = async (epoch) => {
    const before = written.size;
    await append(epoch);
    lines += written.size - before;
  };
  if (resume) for (const epoch of await finishedEpochs(resume.store, resume.runId)) await hook(epoch);
  return { sink, hook, lines: () => lines };
}

/**
 * The completion ids of the lines in `path` (none if it does not exist). A last line without its
 * newline was cut short by a kill: it is cut off, so the next append starts a clean line and
 * rewrites it.
 */
async function writtenIds(path: string): Promise<Set<string>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return new Set();
    throw error;
  }
  const end = text.lastIndexOf('\n') + 1;
  if (end < text.length) {
    await truncate(path, Buffer.byteLength(text.slice(0, end)));
    text = text.slice(0, end);
  }
  const ids = new Set<string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const id = (JSON.parse(line) as Record<string, unknown>)[COLUMN_NAMES.completionId];
      if (typeof id === 'string') ids.add(id);
    } catch {
      // A line that is not JSON was not written by an export; leave it, it names no completion.
    }
  }
  return ids;
}
