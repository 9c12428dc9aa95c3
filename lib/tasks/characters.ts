/**
 * Token-level tasks: the reward is the share of the reply's characters that are of one kind, so
 * every token counts and even an untrained model's group has a reward spread. They are what the
 * bundled character-level model can learn by gradient GRPO in a few steps (its replies start as
 * noise), and a quick check that a real model follows a format instruction.
 */
import { mulberry32, randomInt } from '../math/random.js';
import type { DatasetItem } from '../core/dataset.js';
import type { RewardFunction } from '../core/reward.js';
import type { Task } from './types.js';

/** Share of the characters of `text` that `test` accepts; 0 for an empty reply. */
export function characterShare(text: string, test: (char: string) => boolean): number {
  const chars = [...text];
  return chars.length === 0 ? 0 : chars.filter(test).length / chars.length;
}

function characterTask(name: string, description: string, instruction: string, questions: string[], reward: RewardFunction): Task {
  return {
    name,
    description,
    dataset({ size = 8, seed = 0 } = {}) {
      const random = mulberry32(seed);
      return Array.from({ length: size }, (_, i): DatasetItem => {
        const question = questions[randomInt(random, questions.length)].replace('{n}', String(2 + randomInt(random, 98)));
        return { id: `${name}-${seed}-${i}`, messages: [{ role: 'user', content: `${question} ${instruction}` }] };
      });
    },
    rewards: [reward],
  };
}

/** "digits": answer with digits only; the reward is the share of digits in the reply. */
export const digits: Task = characterTask(
  'digits',
  'Answer with digits only; the reward is the share of digits in the reply.',
  'Answer with digits only.',
  [
    'How many days are in {n} weeks?',
    'What is {n} times 3?',
    'Write a phone number.',
    'Which year comes after {n}?',
    'Count from 1 to {n}.',
    'What is your favourite number?',
    'Give me a four-digit code.',
    'How many minutes are in {n} hours?',
  ],
  { name: 'digit_share', weight: 1, score: ({ text }) => characterShare(text, (c) => c >= '0' && c <= '9') },
);

/** "shout": reply in capital letters only; the reward is the share of the letters A-Z in the reply. */
export const shout: Task = characterTask(
  'shout',
  'Reply in capital letters only; the reward is the share of capital letters A-Z in the reply.',
  'Reply in CAPITAL LETTERS only, no spaces.',
  [
    'Name a colour.',
    'Say hello to {n} friends.',
    'What is the opposite of quiet?',
    'Name an animal that lives in the sea.',
    'Spell the word yes.',
    'Give a name for a cat.',
    'Which planet is red?',
    'Write a word with {n} letters.',
  ],
  { name: 'capital_share', weight: 1, score: ({ text }) => characterShare(text, (c) => c >= 'A' && c <= 'Z') },
);
