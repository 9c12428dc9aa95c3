/**
 * Export and import of a whole run as one JSON document, validated on the way in. Runs move between
 * stores this way (the CLI's files to a browser tab and back) and survive schema changes: the
 * document carries its own format version.
 */
import { InvalidInputError } from '../errors.js';
import type { RunBundle, RunRecord } from './records/index.js';
import type { Store } from './store.js';
import { upgradeV4Step } from './records/upgrade-v4.js';
import { validateBundle } from './records/validate.js';
import type { RecordLookup } from './records/kind.js';
import { parsedJson } from '../core/shape.js';

/** The `format` field of an exported run document. */
export const RUN_EXPORT_FORMAT = 'webgrpo.run';
/** The version of the exported run document `exportRun` writes; `importRun` reads this and older ones. */
export const RUN_EXPORT_VERSION = 2;

export interface RunExport extends RunBundle {
  format: typeof RUN_EXPORT_FORMAT;
  version: number;
  exportedAt: string;
}

/** A run as one JSON document (`RunExport`: its record, items, steps, evaluations and checkpoint), for `importRun` into any other store. */
export async function exportRun(store: Store, runId: string): Promise<RunExport> {
  const bundle = await store.readBundle(runId);
  return { format: RUN_EXPORT_FORMAT, version: RUN_EXPORT_VERSION, exportedAt: new Date().toISOString(), ...bundle };
}

export interface ImportOptions {
  /** Store it under this id instead of the one in the document. */
  runId?: string;
  /** Overwrite a run with the same id. Default false (a clash is an error). */
  replace?: boolean;
  /** The run kinds it reads (their checks and migrations); the core entry's `importRun` passes the registered methods'. */
  records: RecordLookup;
}

/**
 * Validates `data` (an object or its JSON text) and stores it in one transaction. The imported run
 * is marked `aborted` unless it had completed, so it can be resumed here. Returns its record.
 */
export async function importRun(store: Store, data: unknown, options: ImportOptions): Promise<RunRecord> {
  const value = parsedJson(data, 'run');
  const document = upgradeExport(value, options.records);
  const bundle = validateBundle(document, options.records);
  if (options.runId !== undefined) bundle.run = { ...bundle.run, id: options.runId };
  if (bundle.run.status === 'running') bundle.run = { ...bundle.run, status: 'aborted' };
  await store.writeBundle(bundle, { replace: options.replace });
  return structuredClone(bundle.run);
}

/**
 * Brings an export document of any known version to the current one. Version 1 is the first;
 * version 2 moved each step's method fields into its `payload`. A later format change adds its
 * upgrade step here.
 */
function upgradeExport(value: unknown, records: RecordLookup): unknown {
  if (typeof value !== 'object' || value === null) throw new InvalidInputError('run', 'expected an exported run object.');
  const doc = value as { format?: unknown; version?: unknown };
  if (doc.format !== RUN_EXPORT_FORMAT) throw new InvalidInputError('run.format', `expected "${RUN_EXPORT_FORMAT}"; is this a webgrpo run export?`);
  if (typeof doc.version !== 'number' || !Number.isInteger(doc.version) || doc.version < 1) {
    throw new InvalidInputError('run.version', 'expected a positive integer.');
  }
  if (doc.version > RUN_EXPORT_VERSION) {
    throw new InvalidInputError('run.version', `is ${doc.version}, newer than this webgrpo reads (${RUN_EXPORT_VERSION}); upgrade webgrpo.`);
  }
  if (doc.version === 1) {
    const v1 = value as { run?: { kind?: unknown }; steps?: unknown };
    if (Array.isArray(v1.steps)) return { ...v1, version: 2, steps: v1.steps.map((step) => upgradeV4Step(step, v1.run?.kind, records)) };
  }
  return value;
}
