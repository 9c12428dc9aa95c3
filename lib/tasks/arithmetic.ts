/** Small arithmetic: one operation on small integers, answered with the number alone. */
import { mulberry32, randomInt } from '../math/random.js';
import type { DatasetItem } from '../core/dataset.js';
import type { Task } from './types.js';
import { lastNumber } from './text.js';

function answerOf(item: DatasetItem): number | null {
  return typeof item.answer === 'number' ? item.answer : null;
}

/** "arithmetic": one operation on small integers, answered with the number alone. */
export const arithmetic: Task = {
  name: 'arithmetic',
  description: 'Add, subtract or multiply two small integers; reply with the number only.',
  dataset({ size = 8, seed = 0 } = {}) {
    const random = mulberry32(seed);
    return Array.from({ length: size }, (_, i): DatasetItem => {
      const op = ['+', '-', '*'][randomInt(random, 3)];
      const a = 2 + randomInt(random, op === '*' ? 11 : 90);
      const b = 2 + randomInt(random, op === '*' ? 11 : 90);
      const answer = op === '+' ? a + b : op === '-' ? a - b : a * b;
      const content = `What is ${a} ${op === '*' ? '×' : op} ${b}? Reply with the number only.`;
      return { id: `arithmetic-${seed}-${i}`, messages: [{ role: 'user', content }], answer };
    });
  },
  rewards: [
    {
      name: 'correct',
      weight: 1,
      score: ({ text, item }) => {
        const answer = answerOf(item);
        return answer === null ? null : lastNumber(text) === answer ? 1 : 0;
      },
    },
    {
      // Partial credit for being close, so near misses rank above nonsense.
      name: 'close',
      weight: 0.5,
      score: ({ text, item }) => {
        const answer = answerOf(item);
        if (answer === null) return null;
        const value = lastNumber(text);
        return value === undefined ? 0 : Math.max(0, 1 - Math.abs(value - answer) / Math.max(1, Math.abs(answer)));
      },
    },
    {
      name: 'number_only',
      weight: 0.25,
      score: ({ text }) => (/^-?\d+$/.test(text.trim()) ? 1 : 0),
    },
  ],
};
