/**
 * A stored run as export groups: one group per item result (every item of every committed step,
 * then the finished items of the step in progress), with the prompt exactly as the policy saw it
 * (a training-free library's experiences included) and every rollout's reward, advantage, token
 * ids and log-probs, as lib/run/groups.ts writes them. A method may write its groups its own way
 * (`exportGroups`): the router's group was sampled from one prompt per arm, so it is one export
 * group per arm (same group id, the arm's prompt, its rows).
 */
import { InvalidInputError } from '../errors.js';
import { methodOf } from '../methods/registry.js';
import type { ItemResult, RunBundle } from '../store/records/index.js';
import { itemResultGroup, type ExportGroup } from '../run/groups.js';

export { itemResultGroup };

/** Every finished group of a run (as `exportRun` or `store.readBundle` return it), in step order. */
export function runGroups(bundle: RunBundle): ExportGroup[] {
  return runResults(bundle).flatMap((result) => resultGroups(bundle, result));
}

/** The run's item results in step order: its committed steps', then the step in progress'. */
export function runResults(bundle: RunBundle): ItemResult[] {
  if (!isRunBundle(bundle)) throw new InvalidInputError('run', 'expected a run bundle { run, items, steps, pending } (exportRun, store.readBundle).');
  // Stores hand pending items back in their own key order; sort so every store exports alike.
  const pending = [...bundle.pending].sort((a, b) => a.step - b.step || a.position - b.position);
  return [...bundle.steps.flatMap((step) => step.items), ...pending];
}

/** One item result's export groups: the run's method says how they are written (the router's: one per arm). */
export function resultGroups(bundle: RunBundle, result: ItemResult): ExportGroup[] {
  const method = methodOf(bundle.run.kind);
  return method?.exportGroups?.(bundle.run.config, bundle.run.id, result) ?? [itemResultGroup(bundle.run.id, result)];
}

/** Whether `value` has the shape of a run bundle (or a run export, which is one). */
export function isRunBundle(value: unknown): value is RunBundle {
  if (value === null || typeof value !== 'object') return false;
  const candidate = value as Partial<RunBundle>;
  return (
    typeof candidate.run === 'object' &&
    candidate.run !== null &&
    typeof candidate.run.id === 'string' &&
    Array.isArray(candidate.steps) &&
    Array.isArray(candidate.pending)
  );
}
