/**
 * Alphabetise a list into an exact format: the example task of the grpo_server package, where a small
 * model learns to answer "put these words in order" in one precise line. Partial credit (format
 * and similarity to the answer) gives even a weak model's group a reward spread to learn from.
 */
import { mulberry32, randomInt } from '../math/random.js';
import type { DatasetItem } from '../core/dataset.js';
import type { Task } from './types.js';
import { exact, similar } from './skill.js';
import { squash } from './text.js';

const WORDS = [
  'apple', 'anchor', 'bamboo', 'banana', 'candle', 'cherry', 'dolphin', 'desert', 'eagle', 'ember',
  'falcon', 'fig', 'garden', 'grape', 'harbor', 'hazel', 'igloo', 'island', 'jasmine', 'jungle',
  'kettle', 'kiwi', 'lantern', 'lemon', 'maple', 'mango', 'nectar', 'nutmeg', 'olive', 'orbit',
  'pepper', 'pear', 'quartz', 'quill', 'raven', 'river', 'saddle', 'spruce', 'tiger', 'tulip',
  'umber', 'valley', 'velvet', 'walnut', 'willow', 'yarrow', 'zephyr', 'zinc',
];

const FORMAT = /^Sorted: [a-z]+(?:, [a-z]+)*$/;

/** The expected reply to a list of words. */
export function alphabetiseAnswer(words: readonly string[]): string {
  return `Sorted: ${[...words].sort().join(', ')}`;
}

function answerOf(item: DatasetItem): string | null {
  return typeof item.answer === 'string' ? item.answer : null;
}

/** "alphabetise": put a list of words in alphabetical order on one line, with partial credit for the format and for being close. */
export const alphabetise: Task = {
  name: 'alphabetise',
  description: 'Put 3 to 6 words in alphabetical order and reply with one line "Sorted: a, b, c".',
  dataset({ size = 8, seed = 0 } = {}) {
    const random = mulberry32(seed);
    return Array.from({ length: size }, (_, i): DatasetItem => {
      const pool = [...WORDS];
      const count = 3 + randomInt(random, 4);
      const words = Array.from({ length: count }, () => pool.splice(randomInt(random, pool.length), 1)[0]);
      const content = `Put these words in alphabetical order: ${words.join(', ')}.\nReply with one line in exactly this format: Sorted: word, word, word`;
      return { id: `alphabetise-${seed}-${i}`, messages: [{ role: 'user', content }], answer: alphabetiseAnswer(words) };
    });
  },
  rewards: [
    exact,
    {
      name: 'format',
      weight: 0.5,
      score: ({ text, item }) => {
        const answer = answerOf(item);
        if (answer === null) return null;
        const reply = squash(text);
        if (!FORMAT.test(reply)) return 0;
        return reply.split(', ').length === answer.split(', ').length ? 1 : 0.5;
      },
    },
    similar,
  ],
};
