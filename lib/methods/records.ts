/**
 * The registered methods' record kinds (`RecordKind`), by kind: the built-in ones from the start,
 * another's once `registerMethod` adds it. The public entries open stores, import and validate
 * runs with them, so a caller never hands them over.
 */
import { importRun as importWith, type ImportOptions } from '../store/bundle.js';
import type { RecordKind, RecordLookup } from '../store/record-kind.js';
import type { RunBundle, RunRecord } from '../store/records.js';
import type { Store } from '../store/types.js';
import { validateBundle as validateWith } from '../store/validate.js';
import { GRADIENT_RECORD } from './gradient/record.js';
import { LORA_RECORD } from './lora/record.js';
import { ROUTER_RECORD } from './router/record.js';
import { TRAINING_FREE_RECORD } from './training-free/record.js';

const RECORDS = new Map<string, RecordKind>([TRAINING_FREE_RECORD, GRADIENT_RECORD, LORA_RECORD, ROUTER_RECORD].map((record) => [record.kind, record]));

/** The registered methods' record kinds, as a store reads them (a method registered later is read too). */
export const methodRecords: RecordLookup = RECORDS;

/** Makes runs of `record.kind` known to the stores, imports and validation (`registerMethod` checked it). */
export function registerRecord(record: RecordKind): void {
  RECORDS.set(record.kind, record);
}

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
