/**
 * A dataset item as the trainers elsewhere read it (verl's parquet, TRL's prompt dataset): the
 * user's own prompt, never the one a method built from it (a library's lessons, a router arm's
 * instruction), and the answer as one string, which is what rule-based reward functions compare.
 * Both have one type in every row: an item without an answer has the ground truth '' (never null,
 * which pyarrow would type as a null column where no item has an answer), so a reward function
 * reads '' as "no answer".
 */
import type { ChatMessage } from '../core/policy.js';
import type { DatasetItem } from '../core/dataset.js';

/** The item's prompt as chat messages: its messages, or a raw prompt as one user message. */
export function itemMessages(item: DatasetItem): ChatMessage[] {
  if (item.messages) return item.messages.map((m) => ({ role: m.role, content: m.content }));
  return [{ role: 'user', content: item.prompt ?? '' }];
}

/** The answer as text: a string as it is, a number or boolean as its digits or word, other JSON as JSON; '' when absent. */
export function groundTruth(answer: unknown): string {
  if (answer === undefined || answer === null) return '';
  if (typeof answer === 'string') return answer;
  if (typeof answer === 'number' || typeof answer === 'boolean') return String(answer);
  return JSON.stringify(answer);
}
