/**
 * Putting the library into a prompt: numbered lines (`[G0] ...`) for lessons and worked examples for
 * exemplars, under a token budget, inside a template the caller can replace.
 */
import type { ChatMessage, PromptInput } from '../core/policy.js';
import { InvalidInputError } from '../errors.js';
import { relevanceScores } from './relevance.js';
import type { ExemplarEntry, ExperienceEntry, ExperienceLibrary } from './types.js';

/** Most tokens the rendered library takes in a prompt when `tokenBudget` is not given. */
export const DEFAULT_EXPERIENCE_TOKEN_BUDGET = 512;

/** Our wording. `{{experiences}}` is the rendered library, `{{prompt}}` the task itself. */
export const DEFAULT_LESSONS_TEMPLATE = [
  'Lessons learned from earlier attempts at similar tasks. Apply the ones that fit:',
  '{{experiences}}',
  '',
  '{{prompt}}',
].join('\n');

/** Our wording for exemplar mode. `{{experiences}}` is the rendered exemplars, `{{prompt}}` the task itself. */
export const DEFAULT_EXEMPLARS_TEMPLATE = [
  'Good answers to similar tasks, for reference:',
  '',
  '{{experiences}}',
  '',
  '{{prompt}}',
].join('\n');

export interface RenderOptions {
  /** Most tokens the rendered block may take. Default 512. */
  tokenBudget?: number;
  /** Token count of a text; default `estimateTokens` (about four characters per token). */
  countTokens?: (text: string) => number;
  /** Leave out the exemplar of this item, so an item never sees its own best answer. */
  excludeItem?: string;
  /**
   * Show only this many entries, those most relevant to `relevantTo` (relevance.ts: shared words
   * and word pairs, the rarer counting more; an exemplar is compared by its task, a lesson by its
   * text). 0 or absent: everything that fits the budget.
   */
  retrieve?: number;
  /** The task the retrieved entries should fit; required with `retrieve`. */
  relevantTo?: string;
}

export interface RenderedExperiences {
  /** The block for `{{experiences}}`; empty when nothing fits or the library is empty. */
  text: string;
  /** Ids included, in the order they appear. */
  included: string[];
  /** Ids left out: the budget ran out, or they were beyond `retrieve`. */
  dropped: string[];
  tokens: number;
}

/** A tokenizer-free estimate: one token per four characters, rounded up. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export function formatLesson(entry: ExperienceEntry): string {
  return `[${entry.id}] ${entry.text}`;
}

export function formatExemplar(entry: ExemplarEntry): string {
  return `[${entry.id}] Task: ${entry.item}\nAnswer: ${entry.output}`;
}

/**
 * Renders the library under the token budget. When not everything fits, lessons go first (they
 * are short and general), the most recently confirmed first, then exemplars, the best-scoring
 * first; with `retrieve`, the most relevant entries go first (that order on ties) and no more
 * than `retrieve` are kept. Whatever is kept is shown in library order.
 */
export function renderExperiences(library: ExperienceLibrary, options: RenderOptions = {}): RenderedExperiences {
  const budget = options.tokenBudget ?? DEFAULT_EXPERIENCE_TOKEN_BUDGET;
  const count = options.countTokens ?? estimateTokens;
  const lessons = library.entries.map((entry, order) => ({ id: entry.id, text: formatLesson(entry), order, entry }));
  const exemplars = library.exemplars
    .filter((entry) => entry.item !== options.excludeItem)
    .map((entry, order) => ({ id: entry.id, text: formatExemplar(entry), order: lessons.length + order, entry }));

  const retrieve = options.retrieve ?? 0;
  let byPriority = [
    ...[...lessons].sort((a, b) => b.entry.updatedStep - a.entry.updatedStep || b.entry.createdStep - a.entry.createdStep || a.order - b.order),
    ...[...exemplars].sort((a, b) => b.entry.score - a.entry.score || b.entry.updatedStep - a.entry.updatedStep || a.order - b.order),
  ];
  if (retrieve > 0) {
    if (options.relevantTo === undefined) throw new InvalidInputError('relevantTo', 'is needed with `retrieve`: the task to compare the entries with.');
    const scores = relevanceScores(options.relevantTo, byPriority.map((c) => ('item' in c.entry ? c.entry.item : c.entry.text)));
    byPriority = byPriority.map((c, rank) => ({ c, rank, score: scores[rank] })).sort((a, b) => b.score - a.score || a.rank - b.rank).map(({ c }) => c);
  }
  let tokens = 0;
  const chosen = new Set<string>();
  const dropped: string[] = [];
  for (const candidate of byPriority) {
    // +1 for the line break that separates it from the next entry.
    const cost = count(candidate.text) + 1;
    const enough = retrieve > 0 && chosen.size >= retrieve;
    if (!enough && tokens + cost <= budget) {
      tokens += cost;
      chosen.add(candidate.id);
    } else {
      dropped.push(candidate.id);
    }
  }
  const keptLessons = lessons.filter((l) => chosen.has(l.id));
  const keptExemplars = exemplars.filter((e) => chosen.has(e.id));
  const parts: string[] = [];
  if (keptLessons.length) parts.push(keptLessons.map((l) => l.text).join('\n'));
  if (keptExemplars.length) parts.push(keptExemplars.map((e) => e.text).join('\n\n'));
  return {
    text: parts.join('\n\n'),
    included: [...keptLessons, ...keptExemplars].map((c) => c.id),
    dropped,
    tokens,
  };
}

/**
 * Replaces `{{name}}` placeholders in one pass, so text inserted for one placeholder (model output,
 * a lesson) is never itself expanded. Unknown placeholders are left as they are.
 */
export function fillTemplate(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (whole, name: string) =>
    Object.prototype.hasOwnProperty.call(values, name) ? values[name] : whole,
  );
}

/** The task text of a prompt: the prompt itself, or the content of the last user message. */
export function promptText(input: PromptInput): string {
  if (input.prompt !== undefined) return input.prompt;
  const messages = input.messages ?? [];
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === 'user') return messages[i].content;
  return '';
}

/**
 * The prompt with the experiences block put in through `template`: applied to the raw prompt, or
 * to the last user message of a chat. An empty block leaves the prompt untouched (as the paper does
 * before the first lesson exists).
 */
export function withExperiences(input: PromptInput, experiences: string, template: string): PromptInput {
  if (experiences === '') return input;
  return mapPromptText(input, (prompt) => fillTemplate(template, { experiences, prompt }));
}

export interface LibraryPromptOptions extends Omit<RenderOptions, 'excludeItem' | 'relevantTo'> {
  /**
   * The template around the task (`{{experiences}}`, `{{prompt}}`); default the lessons one, or the
   * exemplars one for a library of exemplars only.
   */
  template?: string;
}

/**
 * A task's prompt with the library in it, as a Training-Free run puts it there: rendered under the
 * token budget, without the task's own exemplar, through the template. `included` lists the ids used.
 */
export function promptWithLibrary(base: PromptInput, library: ExperienceLibrary, options: LibraryPromptOptions = {}): { prompt: PromptInput; included: string[] } {
  const task = promptText(base);
  const rendered = renderExperiences(library, { tokenBudget: options.tokenBudget, countTokens: options.countTokens, excludeItem: task, retrieve: options.retrieve, relevantTo: task });
  const template = options.template ?? (library.entries.length === 0 && library.exemplars.length > 0 ? DEFAULT_EXEMPLARS_TEMPLATE : DEFAULT_LESSONS_TEMPLATE);
  return { prompt: withExperiences(base, rendered.text, template), included: rendered.included };
}

/** The prompt with `map` applied to its task text: the raw prompt, or the last user message. */
export function mapPromptText(input: PromptInput, map: (text: string) => string): PromptInput {
  if (input.prompt !== undefined) return { prompt: map(input.prompt) };
  const messages: ChatMessage[] = (input.messages ?? []).map((m) => ({ ...m }));
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === 'user') {
      messages[i] = { ...messages[i], content: map(messages[i].content) };
      break;
    }
  }
  return { messages };
}
