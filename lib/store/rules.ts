/**
 * The rules every store (memory, IndexedDB, files) keeps alike, in one place: which run is listed
 * first, which runs keep an adapter checkpoint, and the errors of a taken id, a step out of turn and a run held by another loop. The
 * stores' contract test holds each implementation to them.
 */
import { AlreadyRunningError, StoreError } from '../errors.js';
import type { EvaluationRecord, RunRecord } from './records/index.js';
import type { RecordLookup } from './records/kind.js';

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
