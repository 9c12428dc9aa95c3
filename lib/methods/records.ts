/**
 * The registered methods' record kinds (each method's `record`), by kind, as the stores, imports
 * and validation of the public entries read runs with them, so a caller never hands them over.
 */
import { importRun as importWith, type ImportOptions } from '../store/run-export.js';
import type { RecordLookup } from '../store/records/kind.js';
import type { RunBundle, RunRecord } from '../store/records/index.js';
import type { Store } from '../store/store.js';
import { validateBundle as validateWith } from '../store/records/validate.js';
import { methodKinds, methodOf } from './registry.js';

/** The registered methods' record kinds (a method registered later is read too). */
export const methodRecords: RecordLookup = { get: (kind) => methodOf(kind)?.record, keys: methodKinds };

/** Checks a whole run (an import) and that its parts agree: step numbers, item indices, counts; its method's parts by its kind. */
export function validateBundle(value: unknown, at = 'run'): RunBundle {
  return validateWith(value, methodRecords, at);
}

/**
 * Validates `data` (an object or its JSON text) and stores it in one transaction. The imported run
 * is marked `aborted` unless it had completed, so it can be resumed here. Returns its record.
 */
export function importRun(store: Store, data: unknown, options: Partial<ImportOptions> = {}): Promise<RunRecord> {
  return importWith(store, data, { ...options, records: options.records ?? methodRecords });
}
