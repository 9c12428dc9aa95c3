/**
 * Fitting the critic's prompts into the critic's context. A local critic may have a short one (the
 * bundled model reads 2048 characters), and a prompt plus its reply must fit or the policy refuses
 * the call. When the critic says how long its context is (`info.maxPositions`), each prompt is
 * counted with the critic's tokenizer and, if too long, its fields are cut in a stated order (the
 * group's completions first, then the library listing, then the question), each cut ending with a
 * visible marker. The template's own text and the answer's format are never cut.
 */
import { fillTemplate } from '../../experience/render.js';
import type { Policy } from '../../core/policy.js';

/**
 * Tokens kept for the chat template's markup: some per message (role headers, end markers) and
 * some for the whole (a begin-of-text token, a template's own system preamble, the reply's header).
 */
export const MARKUP_TOKENS = 32;
export const MARKUP_TOKENS_PER_MESSAGE = 12;
/** Least of an item kept when cutting, in characters (enough to recognise it). */
const MIN_KEPT = 24;
/** Rounds of cutting and counting again before giving up (each cut is estimated from the last count). */
const ROUNDS = 8;

export interface CriticBudget {
  /** Reply tokens per call: `criticMaxNewTokens`, and at most half the critic's context. */
  maxNewTokens: number;
  /** Most tokens the messages' text may take, markup left out; Infinity when the context is unknown. */
  promptTokens: number;
  /** Tokens of `text` for the critic (its tokenizer, else UTF-8 bytes: at least as many as any byte-level or character tokenizer makes). */
  count(text: string): Promise<number>;
}

/** The budget of one critic call of `messages` messages. */
export function criticBudget(critic: Policy, criticMaxNewTokens: number, messages = 2): CriticBudget {
  const context = critic.info.maxPositions;
  const encode = critic.encode?.bind(critic);
  const count = encode ? async (text: string) => (await encode(text)).length : async (text: string) => new TextEncoder().encode(text).length;
  if (context === undefined || !Number.isFinite(context)) return { maxNewTokens: criticMaxNewTokens, promptTokens: Infinity, count };
  const maxNewTokens = Math.max(1, Math.min(criticMaxNewTokens, Math.floor(context / 2)));
  return { maxNewTokens, promptTokens: context - maxNewTokens - MARKUP_TOKENS - MARKUP_TOKENS_PER_MESSAGE * messages, count };
}

/** A template value: one text, or a list shown as one text whose items are cut alike. */
export type PromptField = string | { items: readonly string[]; join(items: string[]): string };

export interface CriticPrompt {
  template: string;
  fields: Readonly<Record<string, PromptField>>;
  /** Fields that may be cut to fit, in the order they are cut. */
  cut: readonly string[];
}

/**
 * `prompt` filled and followed by `suffix`, cut so that it and `alongside` (the text of the call's
 * other messages) fit `budget.promptTokens`.
 * If the fields cannot be cut far enough it comes back as short as they go (the policy then
 * refuses the call, and the caller skips the step with a warning).
 */
export async function fitPrompt(prompt: CriticPrompt, alongside: string, suffix: string, budget: CriticBudget): Promise<string> {
  const names = Object.keys(prompt.fields);
  const items = new Map(names.map((name) => [name, listOf(prompt.fields[name])]));
  const kept = new Map(names.map((name) => [name, items.get(name)!.map((item) => item.length)]));
  // Items of a list shown, from its start: a list whose items are all cut short and still too long
  // (a library of many lessons, each cut item carrying its marker) loses items from its end.
  const shown = new Map(names.map((name) => [name, items.get(name)!.length]));
  const render = () =>
    fillTemplate(
      prompt.template,
      Object.fromEntries(
        names.map((name) => {
          const count = shown.get(name)!;
          const texts = items.get(name)!.slice(0, count).map((item, i) => cutText(item, kept.get(name)![i]));
          if (count < items.get(name)!.length) texts[count - 1] += ` [... ${items.get(name)!.length - count} more cut]`;
          return [name, joinOf(prompt.fields[name], texts)];
        }),
      ),
    ) + suffix;
  let text = render();
  if (budget.promptTokens === Infinity) return text;
  const room = budget.promptTokens - (await budget.count(alongside));
  const listItems = names.reduce((n, name) => n + items.get(name)!.length, 0);
  for (let round = 0; round < ROUNDS + listItems; round++) {
    const tokens = await budget.count(text);
    if (tokens <= room) return text;
    // Characters to cut, from this text's characters per token, with room for the markers.
    const wanted = Math.ceil(((tokens - room) * text.length) / tokens) + 16;
    let left = wanted;
    if (round < ROUNDS) {
      for (const name of prompt.cut) {
        const list = kept.get(name);
        if (list && left > 0) left -= shrink(list, left);
      }
    }
    if (left === wanted) {
      // Nothing left to cut within items: the last shown item of the first list in cut order that has two or more goes.
      const name = prompt.cut.find((n) => typeof prompt.fields[n] !== 'string' && shown.get(n)! > 1);
      if (name === undefined) return text;
      shown.set(name, shown.get(name)! - 1);
    }
    text = render();
  }
  return text;
}

/**
 * Cuts about `chars` characters from the items' kept lengths, the longest first (down to one level
 * for all, so short items stay whole), none below MIN_KEPT. Returns how many were cut.
 */
function shrink(kept: number[], chars: number): number {
  const cutAt = (level: number) => kept.reduce((sum, k) => sum + Math.max(0, k - level), 0);
  const top = Math.max(...kept);
  if (top <= MIN_KEPT) return 0;
  // The highest level that cuts enough (or MIN_KEPT, when nothing does).
  let low = MIN_KEPT;
  let high = top;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (cutAt(mid) >= chars) low = mid;
    else high = mid - 1;
  }
  const cut = cutAt(low);
  for (let i = 0; i < kept.length; i++) kept[i] = Math.min(kept[i], low);
  return cut;
}

/** The first `keep` characters of `text` and a marker saying how much was cut (no surrogate pair split). */
export function cutText(text: string, keep: number): string {
  if (keep >= text.length) return text;
  let end = keep;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${text.slice(0, end)} [... ${text.length - end} more characters cut]`;
}

function listOf(field: PromptField): readonly string[] {
  return typeof field === 'string' ? [field] : field.items;
}

function joinOf(field: PromptField, items: string[]): string {
  return typeof field === 'string' ? items[0] : field.join(items);
}
