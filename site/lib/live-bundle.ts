/**
 * The selected run's bundle as a live run's events change it, without reading the whole run back:
 * a finished item joins the pending ones, a committed step replaces them (with the adapter it
 * stored), an evaluation replaces its epoch's. Pure: each returns a new bundle.
 */
import type { EvaluationRecord, ItemResult, RunBundle, StepRecord } from '../../lib/index.js';

export function withPendingItem(bundle: RunBundle, result: ItemResult): RunBundle {
  return { ...bundle, pending: [...bundle.pending, result] };
}

export function withCommittedStep(bundle: RunBundle, record: StepRecord, adapter: RunBundle['adapter']): RunBundle {
  return {
    ...bundle,
    steps: [...bundle.steps.filter((s) => s.step !== record.step), record],
    pending: bundle.pending.filter((r) => r.step !== record.step),
    ...(adapter ? { adapter } : {}),
  };
}

export function withEvaluation(bundle: RunBundle, evaluation: EvaluationRecord): RunBundle {
  const evaluations = [...(bundle.run.evaluations ?? []).filter((e) => e.epoch !== evaluation.epoch), evaluation].sort((x, y) => x.epoch - y.epoch);
  return { ...bundle, run: { ...bundle.run, evaluations } };
}
