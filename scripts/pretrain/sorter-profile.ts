/**
 * The sorter model's held-out sort-words profile: greedy exact match, the share of right replies
 * at T=1, pass@k at T=1 (scripts/bench/_pass-at.ts), what a constant reply scores, and what the
 * greedy replies are: right, the prompt's order copied, a word written twice, two adjacent words
 * swapped, or another wrong reply; how many distinct greedy replies and the most common one's share.
 */
import type { Policy } from '../../lib/core/policy.js';
import { sortWords } from '../../lib/tasks/skill.js';
import { passAt, type PassAt } from '../bench/_pass-at.js';
import { MAX_REPLY_TOKENS } from './accuracy.js';

export type ReplyKind = 'right' | 'copy' | 'twice' | 'swap' | 'other';

export interface SorterProfile extends PassAt {
  /** Greedy replies by kind, shares of the problems. */
  kinds: Record<ReplyKind, number>;
  distinctGreedy: number;
  mostCommonGreedy: number;
  examples: Array<{ prompt: string; answer: string; reply: string }>;
}

/** What kind of reply `reply` is to a problem whose words, in the prompt's order, are `words`. */
export function replyKind(reply: string, words: readonly string[]): ReplyKind {
  const sorted = [...words].sort();
  const got = reply.trim().split(/\s+/);
  if (got.join(' ') === sorted.join(' ')) return 'right';
  if (got.join(' ') === words.join(' ')) return 'copy';
  if (got.length !== sorted.length) return 'other';
  const diff = got.map((w, i) => (w === sorted[i] ? -1 : i)).filter((i) => i >= 0);
  if (diff.length === 1 && diff[0] > 0 && got[diff[0]] === got[diff[0] - 1]) return 'twice';
  if (diff.length === 2 && diff[1] === diff[0] + 1 && got[diff[0]] === sorted[diff[1]] && got[diff[1]] === sorted[diff[0]]) return 'swap';
  return 'other';
}

export async function sorterProfile(policy: Policy, o: { size: number; seed: number; k: number; samplerSeed: number }): Promise<SorterProfile> {
  const base = await passAt(policy, sortWords, o);
  const items = sortWords.dataset({ size: o.size, seed: o.seed });
  const kinds: Record<ReplyKind, number> = { right: 0, copy: 0, twice: 0, swap: 0, other: 0 };
  const replies: string[] = [];
  const examples: SorterProfile['examples'] = [];
  for (const item of items) {
    const prompt = item.messages![0].content as string;
    const group = await policy.generateGroup({ messages: item.messages, groupSize: 1, maxNewTokens: MAX_REPLY_TOKENS, temperature: 0 });
    const reply = group.completions[0].text;
    replies.push(reply);
    kinds[replyKind(reply, prompt.slice('sort: '.length).split(' '))] += 1 / items.length;
    if (examples.length < 8) examples.push({ prompt, answer: item.answer as string, reply });
  }
  const counts = new Map<string, number>();
  for (const r of replies) counts.set(r, (counts.get(r) ?? 0) + 1);
  return { ...base, kinds, distinctGreedy: counts.size, mostCommonGreedy: Math.max(...counts.values()) / replies.length, examples };
}
