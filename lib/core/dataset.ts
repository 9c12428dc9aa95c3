/** A training or held-out problem as runs store it: plain JSON-compatible data, and its check. */
import type { ChatMessage } from './policy.js';
import { arr, fail, isJson, obj, oneOf, str, type JsonValue, type Obj } from './shape.js';

/** One training problem: a raw prompt or chat messages, and optionally its reference answer. */
export interface DatasetItem {
  prompt?: string;
  messages?: ChatMessage[];
  /** Ground truth for reward functions (and for the critic when `givenGroundTruth`). */
  answer?: JsonValue;
  /** Your own id for the item (kept, shown, never interpreted). */
  id?: string;
  /** Anything else your reward functions need. */
  meta?: { [key: string]: JsonValue };
}

/** A dataset item: exactly one of a non-empty `prompt` or `messages` with a user turn; JSON fields. */
export function validateDatasetItem(value: unknown, at: string): DatasetItem {
  const item = obj(value, at);
  const hasPrompt = item.prompt !== undefined;
  const hasMessages = item.messages !== undefined;
  if (hasPrompt === hasMessages) fail(at, 'give exactly one of "prompt" (a string) or "messages" (chat turns).');
  if (hasPrompt && (typeof item.prompt !== 'string' || item.prompt.trim() === '')) fail(`${at}.prompt`, 'expected a non-empty string.');
  if (hasMessages) {
    const messages = arr(item.messages, `${at}.messages`);
    messages.forEach((m, i) => {
      const message = obj(m, `${at}.messages[${i}]`);
      oneOf(message.role, ['system', 'user', 'assistant'] as const, `${at}.messages[${i}].role`);
      str(message.content, `${at}.messages[${i}].content`);
    });
    if (!messages.some((m) => (m as Obj).role === 'user')) fail(`${at}.messages`, 'needs at least one user message.');
  }
  if (item.answer !== undefined && !isJson(item.answer)) fail(`${at}.answer`, 'must be JSON data (strings, numbers, arrays, plain objects).');
  if (item.id !== undefined) str(item.id, `${at}.id`);
  if (item.meta !== undefined && !(isJson(item.meta) && typeof item.meta === 'object' && !Array.isArray(item.meta))) {
    fail(`${at}.meta`, 'must be a plain object of JSON data.');
  }
  const out: DatasetItem = {};
  if (hasPrompt) out.prompt = item.prompt as string;
  if (hasMessages) out.messages = (item.messages as Obj[]).map((m) => ({ role: m.role as 'user', content: m.content as string }));
  if (item.answer !== undefined) out.answer = structuredClone(item.answer as JsonValue);
  if (item.id !== undefined) out.id = item.id as string;
  if (item.meta !== undefined) out.meta = structuredClone(item.meta as Record<string, JsonValue>);
  return out;
}

/** Checks a dataset (a non-empty array of items) and returns a clean copy; throws `InvalidInputError` naming the first bad field (`argument` prefixes it). */
export function validateDataset(value: unknown, argument = 'dataset'): DatasetItem[] {
  const items = arr(value, argument);
  if (items.length === 0) fail(argument, 'is empty; give at least one item.');
  return items.map((item, i) => validateDatasetItem(item, `${argument}[${i}]`));
}
