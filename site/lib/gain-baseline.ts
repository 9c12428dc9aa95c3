/**
 * What a held-out gain is worth: what one constant reply, and (on tasks that write the prompt's
 * word in a format) one format for every word, would score on the same held-out prompts, and
 * whether the trained model's replies collapsed onto one of them. A rise to 25% is no skill when
 * writing "<word>" for every prompt scores 25% (the reader's head adapter and LoRA at named-format
 * gain that way). Pure.
 */
import type { EvaluatedItem, EvaluationRecord, PromptInput } from '../../lib/index.js';
import { percent } from './held-out.js';

export interface GainBaseline {
  /** The most common reference answer and its share of the prompts: what a constant reply scores. */
  constant: { reply: string; share: number };
  /** Where every answer writes its prompt's word: the most common format ("<*>") and its share. */
  oneFormat: { format: string; share: number } | null;
  /**
   * The trained model's replies (greedy where stored, else each prompt's first sample) where at
   * least COLLAPSED of them are one reply or one format; null where they are not.
   */
  collapse: { kind: 'reply' | 'format'; what: string; count: number; of: number } | null;
  /** Which replies `collapse` read; null before a trained evaluation. */
  replies: 'greedy' | 'sampled' | null;
}

/** The share of the trained replies, one reply or one format, above which they are said to have collapsed. */
export const COLLAPSED = 0.8;

const text = (x: unknown): string | null => (typeof x === 'string' ? x : typeof x === 'number' ? String(x) : null);

/** The word a prompt asks about: what follows its last ": " ("wrap 5: van", "format =*=: log"). */
function wordOf(prompt: PromptInput): string | null {
  const content = prompt.messages ? prompt.messages.filter((m) => m.role === 'user').at(-1)?.content : prompt.prompt;
  const at = content?.lastIndexOf(': ') ?? -1;
  const word = at >= 0 ? content!.slice(at + 2).trim() : '';
  return /^\w+$/.test(word) ? word : null;
}

/** `reply` with the prompt's word as `*`, or null when it does not hold the word. */
function formatOf(reply: string, word: string | null): string | null {
  return word && reply.includes(word) ? reply.replaceAll(word, '*') : null;
}

function mostCommon(values: readonly string[]): { value: string; count: number } {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best = { value: '', count: 0 };
  for (const [value, count] of counts) if (count > best.count) best = { value, count };
  return best;
}

/** The baselines of `before`'s held-out prompts and the collapse of `after`'s replies, or null without reference answers. */
export function gainBaseline(before: EvaluationRecord, after: EvaluationRecord | null): GainBaseline | null {
  const items = before.items.filter((i) => text(i.answer) !== null);
  if (items.length === 0 || items.length < before.items.length) return null;
  const answers = items.map((i) => text(i.answer)!);
  const constant = mostCommon(answers);
  const formats = items.map((i) => formatOf(text(i.answer)!, wordOf(i.prompt)));
  const format = formats.every((f) => f !== null) ? mostCommon(formats as string[]) : null;
  const trained: EvaluatedItem[] | undefined = after ? (after.greedyPass ?? after).items : undefined;
  const replies = trained?.map((i) => i.samples[0]?.text.trim() ?? '') ?? [];
  let collapse: GainBaseline['collapse'] = null;
  if (replies.length > 0) {
    const reply = mostCommon(replies);
    const words = new Map(before.items.map((i) => [i.index, wordOf(i.prompt)]));
    const replyFormats = trained!.map((i, k) => formatOf(replies[k], words.get(i.index) ?? null)).filter((f): f is string => f !== null);
    const inFormat = format ? mostCommon(replyFormats) : { value: '', count: 0 };
    if (reply.count >= COLLAPSED * replies.length) collapse = { kind: 'reply', what: reply.value, count: reply.count, of: replies.length };
    else if (inFormat.count >= COLLAPSED * replies.length) collapse = { kind: 'format', what: inFormat.value, count: inFormat.count, of: replies.length };
  }
  return {
    constant: { reply: constant.value, share: constant.count / items.length },
    oneFormat: format ? { format: format.value, share: format.count / items.length } : null,
    collapse,
    // An evaluation at temperature 0 is itself greedy.
    replies: after ? (after.greedyPass || after.summary.greedy ? 'greedy' : 'sampled') : null,
  };
}

/** Model output and answers in a sentence: quoted, one short line. */
const quote = (s: string) => `“${s.length > 40 ? `${s.slice(0, 39)}…` : s}”`;

/** What the baseline says, in a sentence or two. */
export function baselineNote(b: GainBaseline): string {
  const scores = `One constant reply (${quote(b.constant.reply)}) scores ${percent(b.constant.share)} on these prompts${b.oneFormat ? `; one format for every word (${quote(b.oneFormat.format)}), ${percent(b.oneFormat.share)}` : ''}.`;
  if (!b.replies) return scores;
  if (!b.collapse) return `${scores} The trained model’s ${b.replies} replies did not collapse to one reply or one format.`;
  const what = b.collapse.kind === 'reply' ? `one reply, ${quote(b.collapse.what)}` : `one format, ${quote(b.collapse.what)}`;
  return `${scores} The trained model’s ${b.replies} replies collapsed to ${what} (${b.collapse.count} of ${b.collapse.of}): its exact match is about what that ${b.collapse.kind} scores, not a skill.`;
}
