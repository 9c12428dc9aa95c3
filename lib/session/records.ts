/** Small pure helpers over session records: ids, prompt checks, reward tables. */
import { InvalidInputError } from '../errors.js';
import type { Completion, PromptInput } from '../core/policy.js';
import type { CompletionRecord, GroupSampling, Reward } from '../store/records/session.js';

/** The id of a group's `index`-th completion (`<groupId>-<index>`), the inverse of `parseCompletionId`. */
export function completionId(groupId: string, index: number): string {
  return `${groupId}-${index}`;
}

/** The group id and index inside a completion id (`<groupId>-<index>`), or undefined if it is not one. */
export function parseCompletionId(id: string): { groupId: string; index: number } | undefined {
  const match = /^(.+)-(\d+)$/.exec(id);
  return match ? { groupId: match[1], index: Number(match[2]) } : undefined;
}

/** Exactly one of `prompt` or `messages`, copied; a clear error otherwise. */
export function requirePrompt(input: PromptInput): PromptInput {
  const hasPrompt = input.prompt !== undefined;
  const hasMessages = input.messages !== undefined;
  if (hasPrompt === hasMessages) {
    throw new InvalidInputError('prompt', 'give exactly one of prompt (raw text) or messages (a chat).');
  }
  if (hasPrompt) {
    if (typeof input.prompt !== 'string') throw new InvalidInputError('prompt', 'must be a string.');
    return { prompt: input.prompt };
  }
  const messages = input.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new InvalidInputError('messages', 'must be a non-empty array of { role, content }.');
  }
  messages.forEach((m, i) => {
    if (m === null || typeof m !== 'object' || !['system', 'user', 'assistant'].includes(m.role) || typeof m.content !== 'string') {
      throw new InvalidInputError(`messages[${i}]`, 'must be { role: "system" | "user" | "assistant", content: string }.');
    }
  });
  return { messages: messages.map((m) => ({ role: m.role, content: m.content })) };
}

/** One reward as a row of per-function values; NaN and undefined become null (could not score). */
export function rewardRow(reward: Reward, at: string): (number | null)[] {
  const values = Array.isArray(reward) ? (reward as readonly unknown[]) : [reward];
  if (values.length === 0) throw new InvalidInputError(at, 'is an empty list; give at least one reward value.');
  return values.map((v, k) => {
    if (v === null || v === undefined || (typeof v === 'number' && Number.isNaN(v))) return null;
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      throw new InvalidInputError(Array.isArray(reward) ? `${at}[${k}]` : at, `must be a finite number or null, got ${String(v)}.`);
    }
    return v;
  });
}

/**
 * The N x K table `computeAdvantages` takes: rewarded rows as given, unrewarded rows all null.
 * Every rewarded row must have the same K (one value per reward function).
 */
export function rewardTable(rows: readonly ((number | null)[] | undefined)[]): (number | null)[][] {
  const k = rows.find((r) => r !== undefined)?.length ?? 1;
  rows.forEach((r, i) => {
    if (r !== undefined && r.length !== k) {
      throw new InvalidInputError(
        `rewards[${i}]`,
        `has ${r.length} values but other completions of the group have ${k}; give one value per reward function for every completion.`,
      );
    }
  });
  return rows.map((r) => r ?? new Array<number | null>(k).fill(null));
}

export function policyCompletion(groupId: string, index: number, c: Completion): CompletionRecord {
  return {
    id: completionId(groupId, index),
    index,
    source: 'policy',
    text: c.text,
    tokenIds: [...c.tokenIds],
    logprobs: [...c.logprobs],
    ...(c.topLogprobs ? { topLogprobs: c.topLogprobs.map((row) => row.map((t) => ({ ...t }))) } : {}),
    finishReason: c.finishReason,
  };
}

const SAMPLING_KEYS = ['temperature', 'topK', 'topP', 'minP', 'seed', 'stop', 'maxNewTokens'] as const;

/** The sampling settings of a group: later sources override earlier ones, undefined never does. */
export function samplingOf(...sources: (Partial<GroupSampling> | undefined)[]): GroupSampling {
  const out: Record<string, unknown> = {};
  for (const source of sources) {
    for (const key of SAMPLING_KEYS) {
      const value = source?.[key];
      if (value !== undefined) out[key] = Array.isArray(value) ? [...value] : value;
    }
  }
  return out as GroupSampling;
}

export function finiteOrNull(x: number | undefined): number | null {
  return x !== undefined && Number.isFinite(x) ? x : null;
}

export function isTokenIds(x: unknown): x is number[] {
  return Array.isArray(x) && x.every((v) => Number.isInteger(v) && v >= 0);
}

export function randomGroupId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return 'grp-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
