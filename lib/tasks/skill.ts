/**
 * The skill tasks: short verifiable problems the bundled skill model (public/models/webgrpo-skill)
 * was pretrained on, with prompts of a dozen or two characters so pretraining stays cheap. Each
 * reply is exact (reward `exact`, 1 or 0) with partial credit for near misses (count-letter's
 * excepted), so a group of a partly skilled model has a reward spread to learn from. Every
 * character is in the character tokenizer's vocabulary (printable ASCII).
 */
import { randomInt, type Rng } from '../math/random.js';
import type { DatasetItem } from '../core/dataset.js';
import type { RewardFunction } from '../core/reward.js';
import { splitDataset, splitOf, type Problem, type SkillTask, type Split } from './split.js';
import { lastNumber, similarity, squash } from './text.js';

const answerOf = (item: DatasetItem): string | null => (typeof item.answer === 'string' ? item.answer : null);

export const exact: RewardFunction = {
  name: 'exact',
  weight: 1,
  score: ({ text, item }) => {
    const answer = answerOf(item);
    return answer === null ? null : squash(text) === answer ? 1 : 0;
  },
};

/** Partial credit by edit-distance similarity to the answer. */
export const similar: RewardFunction = {
  name: 'similarity',
  weight: 0.5,
  score: ({ text, item }) => {
    const answer = answerOf(item);
    return answer === null ? null : similarity(squash(text), answer);
  },
};

/** Partial credit for a number near the answer (the reply's last number). */
const close: RewardFunction = {
  name: 'close',
  weight: 0.5,
  score: ({ text, item }) => {
    const answer = answerOf(item);
    if (answer === null) return null;
    const target = Number(answer);
    if (!Number.isFinite(target)) return null;
    const value = lastNumber(text);
    return value === undefined ? 0 : Math.max(0, 1 - Math.abs(value - target) / Math.max(10, Math.abs(target)));
  },
};

/** What every skill task's held-out split holds out. */
const SKILL_HELD_OUT =
  'Held out: problems whose prompt hashes to 0 modulo 5 (splitOf), never in the skill model\'s pretraining corpus. Not held out: the task itself, which the corpus teaches on the other problems.';

function skillTask(name: string, description: string, draw: (random: Rng, split: Split) => Problem, partial?: RewardFunction): SkillTask {
  return { name, description, heldOut: SKILL_HELD_OUT, dataset: (options) => splitDataset(name, draw, options), rewards: partial ? [exact, partial] : [exact] };
}

/** "add-subtract", a skill task: add or subtract two two-digit numbers. */
export const addSubtract = skillTask(
  'add-subtract',
  'Add or subtract two two-digit numbers ("47+25=", "83-29="); reply with the number.',
  (random) => {
    const a = 10 + randomInt(random, 90);
    const b = 10 + randomInt(random, 90);
    // Subtraction keeps the larger number first: answers stay non-negative.
    if (randomInt(random, 2) === 0) return { prompt: `${a}+${b}=`, answer: String(a + b) };
    const [x, y] = a >= b ? [a, b] : [b, a];
    return { prompt: `${x}-${y}=`, answer: String(x - y) };
  },
  close,
);

export const SORT_WORDS: readonly string[] = Object.freeze([
  'ant', 'arm', 'bee', 'box', 'cat', 'cow', 'cup', 'dog', 'dot', 'egg', 'elk', 'fig', 'fox', 'gum', 'hat', 'hen',
  'ink', 'jam', 'jet', 'key', 'kit', 'log', 'map', 'mud', 'net', 'nut', 'oak', 'owl', 'pan', 'pig', 'rat', 'rug',
  'sun', 'sky', 'tea', 'toy', 'urn', 'van', 'web', 'yak', 'zoo', 'bark', 'bell', 'cake', 'coin', 'duck', 'fish',
  'frog', 'goat', 'lamp', 'moon', 'nest', 'pear', 'ring', 'rose', 'star', 'tree', 'wolf',
]);

/** "sort-words", a skill task: put three or four short words in alphabetical order. */
export const sortWords = skillTask(
  'sort-words',
  'Put three or four short words in alphabetical order ("sort: owl cat fig" -> "cat fig owl").',
  (random) => {
    const pool = [...SORT_WORDS];
    const words = Array.from({ length: 3 + randomInt(random, 2) }, () => pool.splice(randomInt(random, pool.length), 1)[0]);
    return { prompt: `sort: ${words.join(' ')}`, answer: [...words].sort().join(' ') };
  },
  similar,
);

/** Words for count-letter: enough with a letter twice or three times that each answer has held-out problems. */
export const COUNT_WORDS: readonly string[] = Object.freeze([
  'banana', 'apple', 'cherry', 'letter', 'coffee', 'pepper', 'summer', 'puppy', 'tomato', 'potato', 'parrot',
  'carrot', 'mirror', 'bubble', 'cookie', 'kitten', 'rabbit', 'yellow', 'window', 'garden', 'button', 'pizza',
  'hello', 'little', 'happy', 'dinner', 'balloon', 'bottle', 'street', 'school', 'cheese', 'sleepy', 'rocket',
  'tunnel', 'mammal', 'eleven', 'seven', 'river', 'orange', 'lemon', 'tiger', 'zebra', 'mango', 'paper',
  'papaya', 'senses', 'tattoo', 'bobby', 'mummy', 'daddy', 'nanny', 'success', 'geese', 'sassy', 'fluffy',
  'giggle', 'address', 'baobab', 'lollipop', 'tomorrow', 'strawberry', 'cinnamon', 'pineapple', 'peppermint',
  'lullaby', 'hubbub', 'bobbin', 'babble', 'nonsense', 'engineer', 'alpaca', 'caravan', 'cassava', 'savanna',
  'goggles', 'muddled', 'sneeze', 'freeze', 'breeze', 'squeeze', 'keeper', 'steeple', 'between', 'excellent',
  'poppy', 'puppet', 'popper', 'oolong', 'bonobo', 'cocoon', 'bikini', 'initial', 'minimum', 'momentum',
  'barbarian', 'reindeer', 'nineteen',
]);

/** count-letter's answers, drawn evenly: a constant reply is right on a third of the problems, chance. */
export const COUNT_ANSWERS: readonly number[] = Object.freeze([1, 2, 3]);

/** Every "count <letter>: <word>" problem of a split, by its answer (a letter of the word, counted). */
const countProblems: Record<Split, Map<number, Problem[]>> = (() => {
  const bySplit: Record<Split, Map<number, Problem[]>> = { heldout: new Map(), train: new Map() };
  for (const word of COUNT_WORDS) {
    for (const letter of new Set(word)) {
      const count = [...word].filter((c) => c === letter).length;
      if (!COUNT_ANSWERS.includes(count)) continue;
      const prompt = `count ${letter}: ${word}`;
      const problems = bySplit[splitOf(prompt)];
      problems.set(count, [...(problems.get(count) ?? []), { prompt, answer: String(count) }]);
    }
  }
  return bySplit;
})();

/** "count-letter", a skill task: how often a letter occurs in a word (1, 2 or 3, equally often). */
export const countLetter = skillTask(
  'count-letter',
  'Count how often a letter occurs in a word ("count p: pepper" -> "3"); the answers 1, 2 and 3 come equally often.',
  // The answer first, then a problem with that answer: answers stay even in either split.
  (random, split) => {
    const problems = countProblems[split].get(COUNT_ANSWERS[randomInt(random, COUNT_ANSWERS.length)])!;
    return problems[randomInt(random, problems.length)];
  },
  // No partial credit: among three small answers, credit for a near number pays the middle one
  // ("2" is within one of every answer), and GRPO then settles on replying "2" to everything.
);

/** Formats: the word goes where `*` is. */
export const FORMATS: readonly string[] = Object.freeze(['[*]', '(*)', '<*>', '{*}', '*!', '#*#', '*-*', '"*"', '_*_', '=*=', '*:*', '*?', '+*+', '/*/', '*.*', '~*']);

/** "copy-format", a skill task: write a word in the format the prompt shows ("format [*]: owl" -> "[owl]"). */
export const copyFormat = skillTask(
  'copy-format',
  'Write a word in a given format ("format [*]: owl" -> "[owl]").',
  (random) => {
    const format = FORMATS[randomInt(random, FORMATS.length)];
    const word = SORT_WORDS[randomInt(random, SORT_WORDS.length)];
    return { prompt: `format ${format}: ${word}`, answer: format.replaceAll('*', word) };
  },
  similar,
);

/** The skill tasks, in the order the model card lists them. */
export const skillTasks: readonly SkillTask[] = Object.freeze([addSubtract, sortWords, countLetter, copyFormat]);
