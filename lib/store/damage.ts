/** Finding the damaged runs of a store, alike in every store: what a whole read of each run refuses. */
import { NotFoundError, StoreCorruptError } from '../errors.js';
import type { DamagedRun } from './store.js';

/**
 * The runs among `runIds` that `read` (a whole read of one run) refuses as corrupt, one at a time so
 * a large store is not read all at once. A run deleted meanwhile is not damaged; other errors (a
 * closed store, a failing disk) are the caller's.
 */
export async function damagedAmong(runIds: readonly string[], read: (runId: string) => Promise<unknown>): Promise<DamagedRun[]> {
  const damaged: DamagedRun[] = [];
  for (const runId of runIds) {
    try {
      await read(runId);
    } catch (error) {
      if (error instanceof StoreCorruptError) damaged.push({ runId, error });
      else if (!(error instanceof NotFoundError)) throw error;
    }
  }
  return damaged;
}

/** For `listRuns`: a run whose record does not read is left out of the list (`listDamaged` names it). */
export function leftOut(error: unknown): undefined {
  if (error instanceof StoreCorruptError) return undefined;
  throw error;
}
