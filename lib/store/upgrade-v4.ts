/**
 * Step records as schema v4 stored them (file store 1, IndexedDB 4, run export 1) into today's
 * shape: the common fields, and the method's fields moved into `payload` under the run's kind.
 * The v4 record was the training-free shape for every run: a library and operation lists on
 * every step, `training` on gradient steps, `routing` on router steps, a registered method's own
 * fields beside them. Those lists mean something only to training-free runs, so the other kinds'
 * payloads drop them. Every store and the import run this once, when they upgrade.
 */

/** The fields every step keeps outside its payload (`runId`: the IndexedDB row's key). */
const COMMON = new Set(['runId', 'step', 'epoch', 'batch', 'items', 'stats', 'warnings', 'committedAt']);
/** The training-free fields every v4 step carried, whatever its run's kind. */
const LIBRARY_FIELDS = new Set(['merge', 'proposed', 'applied', 'skippedOperations', 'library']);
const V4_KEEPS_LIBRARY = 'training-free';

/** `value` in today's shape when it is a v4 step of a `kind` run; anything else as it is (validation reports it). */
export function upgradeV4Step(value: unknown, kind: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || 'payload' in value || typeof kind !== 'string') return value;
  const step: Record<string, unknown> = {};
  const payload: Record<string, unknown> = { kind };
  for (const [key, field] of Object.entries(value)) {
    if (COMMON.has(key)) step[key] = field;
    else if (kind === V4_KEEPS_LIBRARY || !LIBRARY_FIELDS.has(key)) payload[key] = field;
  }
  step.payload = payload;
  return step;
}
