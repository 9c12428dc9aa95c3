/**
 * Step records as schema v4 stored them (file store 1, IndexedDB 4, run export 1) into today's
 * shape: the common fields, and the method's fields moved into `payload` under the run's kind.
 * The v4 record had the experience library's fields on every run's steps (a library and the
 * operation lists), the method's own fields beside them (`training`, `routing`, ...). The run
 * kind's `RecordKind.fromV4` makes its payload of those fields; by default the library's are
 * dropped, as they mean something only to the method that keeps a library (whose record keeps
 * them). Every store and the import run this once, when they upgrade.
 */
import type { RecordLookup } from './kind.js';

/** The fields every step keeps outside its payload (`runId`: the IndexedDB row's key). */
const COMMON = new Set(['runId', 'step', 'epoch', 'batch', 'items', 'stats', 'warnings', 'committedAt']);
/** The experience library's fields every v4 step carried, whatever its run's kind. */
const LIBRARY_FIELDS = new Set(['merge', 'proposed', 'applied', 'skippedOperations', 'library']);

/** `value` in today's shape when it is a v4 step of a `kind` run; anything else as it is (validation reports it). */
export function upgradeV4Step(value: unknown, kind: unknown, records: RecordLookup): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || 'payload' in value || typeof kind !== 'string') return value;
  const step: Record<string, unknown> = {};
  const fields: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) (COMMON.has(key) ? step : fields)[key] = field;
  const fromV4 = records.get(kind)?.fromV4 ?? withoutLibrary;
  step.payload = { kind, ...fromV4(fields) };
  return step;
}

function withoutLibrary(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([key]) => !LIBRARY_FIELDS.has(key)));
}
