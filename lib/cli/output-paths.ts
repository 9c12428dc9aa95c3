/**
 * What `webgrpo train` writes besides its store: `--out` (the run as JSON), `--export-jsonl` (each
 * epoch's completions), `--record` (the model's outputs) and `--peft-out` (a LoRA run's adapter).
 *
 * `--out` and `--export-jsonl` are checked before anything trains: neither may lie inside the store
 * folder (writing there replaces the store's own files: a run record, store.json), the two may not
 * be one file (the run's JSON would replace the JSONL), and each must be a file whose folder exists
 * and can be written. Found after training, any of these lost the run's output.
 */
import { access, realpath, stat, writeFile } from 'node:fs/promises';
import { constants } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { DatasetItem } from '../core/dataset.js';
import type { Policy } from '../core/policy.js';
import { openEpochExport, type EpochExportFile } from '../export/epoch-file.js';
import type { JsonlFormat } from '../export/jsonl.js';
import type { RecordingPolicy } from '../policy/recorded.js';
import { codeOf } from '../store/file/io.js';
import type { FileStore } from '../store/file/store.js';
import { exportRun } from '../store/run-export.js';
import { writeTrainedPeftFolder } from './peft-out.js';
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

/** Columns every exported line carries besides prompt and completion. */
const EXPORT_COLUMNS = ['reward', 'advantage', 'groupId', 'completionId'] as const;

/**
 * `--export-jsonl`: each finished epoch's completions appended to `path`, at least once and never
 * twice (a resume first writes the finished epochs whose lines are missing). The standard format
 * renders chat prompts (a method's own too) through the model's chat template; a chat dataset on a
 * model without one is refused up front, so a run never fails at its first epoch's end over it.
 */
export async function epochExportFile(
  path: string,
  format: JsonlFormat,
  dataset: readonly DatasetItem[],
  policy: Policy,
  resume?: { store: FileStore; runId: string },
): Promise<EpochExportFile> {
  const chats = format === 'standard' && dataset.some((item) => item.messages !== undefined);
  if (chats && !policy.renderPrompt) {
    throw new UsageError(`--export-format standard renders chat prompts through the model's chat template, and ${policy.info.model} (${policy.info.backend}) has none to hand; use --export-format conversational, or a local model.`);
  }
  return openEpochExport(resolve(path), { format, include: EXPORT_COLUMNS, ...(format === 'standard' && policy.renderPrompt ? { render: policy } : {}) }, resume);
}

/**
 * The run's outputs once it has ended (completed, stopped or failed): the epochs' JSONL flushed,
 * the recording, the run as JSON (if it was stored at all) and a LoRA run's PEFT folder.
 */
export async function writeRunOutputs(
  store: FileStore,
  runId: string,
  paths: { out?: string; record?: string; peftOut?: string },
  written: { exported?: EpochExportFile; recorder?: RecordingPolicy },
  stderr: (text: string) => void,
): Promise<void> {
  const { exported, recorder } = written;
  if (exported) {
    await exported.sink.flush();
    if (exported.lines() > 0) stderr(`Appended ${exported.lines()} lines of training data to ${exported.sink.path}\n`);
  }
  if (recorder && paths.record !== undefined) await writeFile(paths.record, JSON.stringify(recorder.recording()));
  if (paths.out !== undefined && (await store.getRun(runId))) {
    await writeFile(paths.out, `${JSON.stringify(await exportRun(store, runId), null, 2)}\n`);
    stderr(`Wrote the run to ${paths.out}\n`);
  }
  if (paths.peftOut !== undefined) await writeTrainedPeftFolder(store, runId, paths.peftOut, stderr);
}
