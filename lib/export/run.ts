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
import type { RunOf } from '../run/run.js';
import type { RunBundle } from '../store/records.js';
import { itemResultGroup, type ExportGroup } from '../run/groups.js';

export { itemResultGroup };

/** Every finished group of a run (as `exportRun` or `store.readBundle` return it), in step order. */
export function runGroups(bundle: RunBundle): ExportGroup[] {
  if (!isRunBundle(bundle)) throw new InvalidInputError('run', 'expected a run bundle { run, items, steps, pending } (exportRun, store.readBundle).');
  const runId = bundle.run.id;
  // Stores hand pending items back in their own key order; sort so every store exports alike.
  const pending = [...bundle.pending].sort((a, b) => a.step - b.step || a.position - b.position);
  const results = [...bundle.steps.flatMap((step) => step.items), ...pending];
  // The run's method says how its groups are written (the router's: one per arm).
  const method = methodOf(bundle.run.kind);
  return results.flatMap((result) => method?.exportGroups?.(bundle.run.config as unknown as RunOf<string>['config'], runId, result) ?? [itemResultGroup(runId, result)]);
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
