/** A training or held-out problem as runs store it: plain JSON-compatible data. */
import type { ChatMessage } from '../policy/types.js';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

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
