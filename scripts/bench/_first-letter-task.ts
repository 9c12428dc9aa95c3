/**
 * The first-letter task as the learning runs use it, with no Node import (the Chromium learning
 * test, test/browser/pages/lora-learning.html, runs it too): training and held-out words, the
 * reward, and the before/after measure on held-out words (one word per letter, never trained on):
 * mean reward of GROUP samples per word, and which letter the replies start with.
 */
import type { DatasetItem } from '../../lib/index.js';
import { firstLetter } from '../../lib/tasks/index.js';
import type { Policy } from '../../lib/core/policy.js';
import type { RewardContext } from '../../lib/core/reward.js';
import { FIRST_LETTER_WORDS } from '../../lib/tasks/first-letter.js';

export const GROUP = 8;
export const BATCH = 4;
export const MAX_NEW = 3;

const reward = firstLetter.rewards[0];
// The task's reward is synchronous and reads only the text and the item.
export const score = (text: string, item: DatasetItem) => (reward.score({ text, item } as RewardContext) as number | null) ?? 0;
export const promptOf = (item: DatasetItem) => item.messages![0].content;
/** Prompts in the chat template (the skill model's training format) or raw. */
export const inputOf = (chat: boolean, item: DatasetItem) => (chat ? { messages: item.messages } : { prompt: promptOf(item) });
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

/** `steps * batch` training items whose words are not held out, and one held-out item per held-out word. */
export function datasets(seed: number, steps: number, batch = BATCH): { train: DatasetItem[]; heldOut: DatasetItem[] } {
  const heldOutWords = new Set(FIRST_LETTER_WORDS.filter((_, i) => i % 2 === 1));
  const wordOf = (item: DatasetItem) => promptOf(item).slice('First letter of '.length, -1);
  const train = firstLetter.dataset({ size: 4 * steps * batch, seed }).filter((item) => !heldOutWords.has(wordOf(item))).slice(0, steps * batch);
  const heldOut = [...heldOutWords].map((word): DatasetItem => ({ messages: [{ role: 'user', content: `First letter of ${word}:` }], answer: word[0] }));
  return { train, heldOut };
}

export interface Measure {
  reward: number;
  /** Held-out words whose most frequent first character of the replies is the right letter. */
  right: number;
  /** Distinct most frequent first characters over the held-out words. */
  distinct: number;
  examples: string[];
}

export async function measure(policy: Pick<Policy, 'generateGroup'>, items: DatasetItem[], seed: number, chat: boolean): Promise<Measure> {
  const rewards: number[] = [];
  const firsts: string[] = [];
  const examples: string[] = [];
  for (const [i, item] of items.entries()) {
    const group = await policy.generateGroup({ ...inputOf(chat, item), groupSize: GROUP, maxNewTokens: MAX_NEW, temperature: 1, seed: seed * 7919 + i });
    const texts = group.completions.map((c) => c.text);
    rewards.push(...texts.map((t) => score(t, item)));
    const counts = new Map<string, number>();
    for (const t of texts) if (t.length > 0) counts.set(t[0].toLowerCase(), (counts.get(t[0].toLowerCase()) ?? 0) + 1);
    firsts.push([...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '');
    if (i < 4) examples.push(`${promptOf(item).slice('First letter of '.length)} ${JSON.stringify(texts[0])}`);
  }
  return { reward: mean(rewards), right: firsts.filter((f, i) => f === items[i].answer).length, distinct: new Set(firsts).size, examples };
}
