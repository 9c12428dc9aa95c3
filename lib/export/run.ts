/**
 * A stored Training-Free GRPO run as export groups: one group per item result (every item of every
 * committed step, then the finished items of the step in progress), with the prompt exactly as the
 * policy saw it (the library's experiences included) and every rollout's reward, advantage, token
 * ids and log-probs. A router run's group was sampled from one prompt per arm, so it is written as
 * one export group per arm (same group id, the arm's prompt, its rows). Ids are stable, so exports
 * of the same run line up:
 *
 *   group       `<runId>:<step>:<dataset index>`
 *   completion  `<runId>:<step>:<dataset index>:<row>`
 */
import { InvalidInputError } from '../errors.js';
import type { PromptInput } from '../policy/types.js';
import { armPrompt } from '../route/arm.js';
import type { ItemResult, RouterArm, RunBundle } from '../store/records.js';
import type { ExportGroup } from './jsonl.js';

/** One item result of run `runId` as an export group (the rows of `rows`, sampled from `prompt`). */
export function itemResultGroup(runId: string, result: ItemResult, prompt: PromptInput = result.prompt, rows?: readonly number[]): ExportGroup {
  const id = `${runId}:${result.step}:${result.index}`;
  const text = prompt.messages !== undefined ? { messages: prompt.messages } : { prompt: prompt.prompt ?? '' };
  return {
    id,
    ...text,
    completions: (rows ?? result.rollouts.map((_, row) => row)).map((row) => {
      const rollout = result.rollouts[row];
      return {
        id: `${id}:${row}`,
        text: rollout.text,
        tokenIds: rollout.tokenIds,
        logprobs: rollout.logprobs,
        reward: rollout.reward,
        advantage: rollout.advantage,
      };
    }),
  };
}

/** A router item's group, one export group per arm that got rows. */
function armGroups(runId: string, result: ItemResult, arms: readonly RouterArm[]): ExportGroup[] {
  return arms.flatMap((arm) => {
    const rows = result.rollouts.flatMap((rollout, row) => (rollout.arm === arm.id ? [row] : []));
    return rows.length ? [itemResultGroup(runId, result, armPrompt(result.prompt, arm), rows)] : [];
  });
}

/** Every finished group of a run (as `exportRun` or `store.readBundle` return it), in step order. */
export function runGroups(bundle: RunBundle): ExportGroup[] {
  if (!isRunBundle(bundle)) throw new InvalidInputError('run', 'expected a run bundle { run, items, steps, pending } (exportRun, store.readBundle).');
  const runId = bundle.run.id;
  // Stores hand pending items back in their own key order; sort so every store exports alike.
  const pending = [...bundle.pending].sort((a, b) => a.step - b.step || a.position - b.position);
  const results = [...bundle.steps.flatMap((step) => step.items), ...pending];
  const run = bundle.run;
  return run.kind === 'router' ? results.flatMap((result) => armGroups(runId, result, run.config.arms)) : results.map((result) => itemResultGroup(runId, result));
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
