/**
 * The rules every store (memory, IndexedDB, files) keeps alike, in one place: which run is listed
 * first, which runs keep an adapter checkpoint, how a status or an evaluation changes a run, the
 * errors of a taken id, a step out of turn and a run held by another loop, the run lock's hold in
 * this page or process, which runs are damaged, and a session store's flush. The stores' contract
 * test holds each implementation to them.
 */
import { AlreadyRunningError, NotFoundError, StoreCorruptError, StoreError } from '../errors.js';
import type { EvaluationRecord, RunRecord } from './records/index.js';
import type { RecordLookup } from './records/kind.js';
import type { DamagedRun, RunLock, RunStatusPatch } from './store.js';

/** Whether every step of a run of this kind commits an adapter checkpoint (its `RecordKind` decodes one). */
export function keepsAdapter(kind: string, records: RecordLookup): boolean {
  return records.get(kind)?.adapter !== undefined;
}

/** Most recently updated first; ties by id, so every store lists alike. */
export function byRecentUpdate(a: RunRecord, b: RunRecord): number {
  return a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : a.id < b.id ? -1 : 1;
}

/** Another loop holds the run (`where`: in this page, another tab, another process). */
export function alreadyRunning(runId: string, where: string): AlreadyRunningError {
  return new AlreadyRunningError(
    runId,
    `Run "${runId}" is already running ${where}. Wait for that loop to finish, or abort it, before starting another on the same run.`,
  );
}

/**
 * Holds `runId` in `held` (the runs this store's loops hold) and takes the store's own lock with
 * `take` (another tab's or process's claim: a Web Lock, a lease row, a lock file), resolving to
 * its release. Returns the lock, whose release is idempotent and lets the run go in both.
 */
export async function holdRun(held: Set<string>, runId: string, where: string, take?: () => Promise<() => Promise<void>>): Promise<RunLock> {
  if (held.has(runId)) throw alreadyRunning(runId, where);
  held.add(runId);
  let release: (() => Promise<void>) | undefined;
  try {
    release = await take?.();
  } catch (error) {
    held.delete(runId);
    throw error;
  }
  let holding = true;
  return {
    runId,
    release: async () => {
      if (!holding) return;
      holding = false;
      held.delete(runId);
      await release?.();
    },
  };
}

/** `createRun` on a taken id. */
export function runExists(runId: string): StoreError {
  return new StoreError(`A run with id "${runId}" exists already; pick another id or resume it.`);
}

/** `writeBundle` on a taken id without `replace`. */
export function bundleExists(runId: string): StoreError {
  return new StoreError(`A run with id "${runId}" exists already; pass { replace: true } to overwrite it.`);
}

/** A commit must be the step after the last committed one (another loop may have got there first). */
export function checkNextStep(runId: string, lastStep: number, step: number): void {
  if (step !== lastStep + 1) {
    throw new StoreError(`Run "${runId}" expects step ${lastStep + 1} next, not step ${step}; another loop may have committed it.`);
  }
}

/** The run with the status (and error, or none) of `patch`, updated now. */
export function withStatus(run: RunRecord, patch: RunStatusPatch): RunRecord {
  const next: RunRecord = { ...run, status: patch.status, updatedAt: new Date().toISOString() };
  if (patch.error !== undefined) next.error = patch.error;
  else delete next.error;
  return next;
}

/**
 * The run with `evaluation` kept among its evaluations, in epoch order: one per epoch, a later one
 * of the same epoch (a resume finishing an interrupted evaluation) replacing the earlier.
 */
export function withEvaluation(run: RunRecord, evaluation: EvaluationRecord): RunRecord {
  const evaluations = (run.evaluations ?? []).filter((e) => e.epoch !== evaluation.epoch);
  evaluations.push(evaluation);
  evaluations.sort((a, b) => a.epoch - b.epoch);
  return { ...run, evaluations, updatedAt: evaluation.evaluatedAt };
}

/**
 * Finding the damaged runs, alike in every store: the runs among `runIds` that `read` (a whole read of one run) refuses as corrupt, one at a time so
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

/** The writes a session store has started and not finished, for its `flush`. */
export class WritesInFlight {
  readonly #writes = new Set<Promise<unknown>>();

  /** Awaits `write`, counted as in flight until it settles. */
  async track(write: Promise<unknown>): Promise<void> {
    this.#writes.add(write);
    try {
      await write;
    } finally {
      this.#writes.delete(write);
    }
  }

  /** Resolves when every write started so far has settled. */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.#writes]);
  }
}
