/**
 * A run's groups as export groups: one prompt and its completions with rewards, advantages, token
 * ids and log-probs (what `toJsonl` writes and `onEpoch` hands over). Ids are stable, so exports
 * of the same run line up:
 *
 *   group       `<runId>:<step>:<dataset index>`
 *   completion  `<runId>:<step>:<dataset index>:<row>`
 */
import type { ChatMessage, PromptInput } from '../core/policy.js';
import type { ItemResult } from '../store/records/index.js';

export interface ExportCompletion {
  id?: string;
  text: string;
  tokenIds?: readonly number[];
  logprobs?: readonly number[];
  /** Combined reward; null when told but unscorable, absent when never told. */
  reward?: number | null;
  advantage?: number;
  /** Router runs: the id of the arm (prompt or sampling variant) that wrote it. */
  arm?: string;
}

/** One prompt and its completions: a session's `GroupRecord` is one, and so is a training run's group. */
export interface ExportGroup {
  id: string;
  /** Exactly one of `prompt` (raw text) or `messages`. */
  prompt?: string;
  messages?: readonly ChatMessage[];
  /** The rendered prompt (chat template applied), which the standard format needs for chats. */
  promptText?: string;
  completions: readonly ExportCompletion[];
}

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
        ...(rollout.arm !== undefined ? { arm: rollout.arm } : {}),
      };
    }),
  };
}


export interface EpochExport {
  /** The epoch that finished, counted from 1 as the run's events count it. */
  epoch: number;
  groups: readonly ExportGroup[];
}

/** Called by the driver once per finished epoch (`onEpoch`), with every group of that epoch. */
export type EpochHook = (epoch: EpochExport) => Promise<void>;
