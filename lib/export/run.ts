/**
 * A stored Training-Free GRPO run as export groups: one group per item result (every item of every
 * committed step, then the finished items of the step in progress), with the prompt exactly as the
 * policy saw it (the library's experiences included) and every rollout's reward, advantage, token
 * ids and log-probs. Ids are stable, so exports of the same run line up:
 *
 *   group       `<runId>:<step>:<dataset index>`
 *   completion  `<runId>:<step>:<dataset index>:<row>`
 */
import { InvalidInputError } from '../errors.js';
import type { ItemResult, RunBundle } from '../store/records.js';
import type { ExportGroup } from './jsonl.js';

/** One item result of run `runId` as an export group. */
export function itemResultGroup(runId: string, result: ItemResult): ExportGroup {
  const id = `${runId}:${result.step}:${result.index}`;
  const prompt = result.prompt.messages !== undefined ? { messages: result.prompt.messages } : { prompt: result.prompt.prompt ?? '' };
  return {
    id,
    ...prompt,
    completions: result.rollouts.map((rollout, row) => ({
      id: `${id}:${row}`,
      text: rollout.text,
      tokenIds: rollout.tokenIds,
      logprobs: rollout.logprobs,
      reward: rollout.reward,
      advantage: rollout.advantage,
    })),
  };
}

/** Every finished group of a run (as `exportRun` or `store.readBundle` return it), in step order. */
export function runGroups(bundle: RunBundle): ExportGroup[] {
  if (!isRunBundle(bundle)) throw new InvalidInputError('run', 'expected a run bundle { run, items, steps, pending } (exportRun, store.readBundle).');
  const runId = bundle.run.id;
  // Stores hand pending items back in their own key order; sort so every store exports alike.
  const pending = [...bundle.pending].sort((a, b) => a.step - b.step || a.position - b.position);
  return [...bundle.steps.flatMap((step) => step.items), ...pending].map((result) => itemResultGroup(runId, result));
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
