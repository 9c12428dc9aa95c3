/**
 * `firstLetter` ("first-letter"): answer with the first letter of the word in the question. The right reply
 * differs with the prompt, so no fixed output earns much: a model has to read the word. The
 * reward is per character (the share of the reply's characters that are that letter, either
 * case), so even an untrained character-level model's group has a reward spread.
 */
import { mulberry32, randomInt } from '../math/random.js';
import type { DatasetItem } from '../core/dataset.js';
import { characterShare } from './characters.js';
import type { Task } from './types.js';

/** Two words for every letter of the alphabet: a dataset draws its first letters evenly. */
export const FIRST_LETTER_WORDS: readonly string[] = Object.freeze([
  'apple', 'anchor', 'bread', 'bottle', 'candle', 'cloud', 'dragon', 'desk', 'eagle', 'engine',
  'forest', 'flute', 'garden', 'glove', 'harbor', 'honey', 'island', 'ink', 'jacket', 'jelly',
  'kettle', 'kite', 'lemon', 'ladder', 'mirror', 'magnet', 'needle', 'nest', 'orange', 'otter',
  'pencil', 'pillow', 'queen', 'quilt', 'river', 'rocket', 'silver', 'spoon', 'tiger', 'tunnel',
  'umbrella', 'uncle', 'violin', 'valley', 'window', 'wagon', 'xylophone', 'xenon', 'yellow', 'yacht',
  'zebra', 'zipper',
]);

/** "first-letter": answer with the first letter of the word in the question, scored per character. */
export const firstLetter: Task = {
  name: 'first-letter',
  description: 'Answer with the first letter of the word in the question; the reward is the share of the reply\'s characters that are that letter.',
  dataset({ size = 8, seed = 0 } = {}) {
    const random = mulberry32(seed);
    return Array.from({ length: size }, (_, i): DatasetItem => {
      const word = FIRST_LETTER_WORDS[randomInt(random, FIRST_LETTER_WORDS.length)];
      return { id: `first-letter-${seed}-${i}`, messages: [{ role: 'user', content: `First letter of ${word}:` }], answer: word[0] };
    });
  },
  rewards: [
    {
      name: 'first_letter_share',
      weight: 1,
      score: ({ text, item }) => {
        const letter = typeof item.answer === 'string' && item.answer.length === 1 ? item.answer.toLowerCase() : null;
        return letter === null ? null : characterShare(text, (c) => c.toLowerCase() === letter);
      },
    },
  ],
};
