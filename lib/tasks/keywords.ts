/** Required keywords: one sentence on a topic that uses every given word. */
import { mulberry32, randomInt } from '../math/random.js';
import type { DatasetItem } from '../core/dataset.js';
import type { Task } from './types.js';

const TOPICS: Array<{ topic: string; words: string[] }> = [
  { topic: 'the sea', words: ['wave', 'salt', 'horizon', 'gull', 'tide'] },
  { topic: 'a forest', words: ['moss', 'pine', 'shadow', 'owl', 'trail'] },
  { topic: 'a city at night', words: ['neon', 'taxi', 'rain', 'window', 'jazz'] },
  { topic: 'a kitchen', words: ['kettle', 'flour', 'oven', 'spoon', 'steam'] },
  { topic: 'a mountain', words: ['summit', 'snow', 'ridge', 'wind', 'goat'] },
  { topic: 'a library', words: ['shelf', 'dust', 'atlas', 'lamp', 'silence'] },
];

function wordsOf(item: DatasetItem): string[] | null {
  return Array.isArray(item.answer) && item.answer.every((w) => typeof w === 'string') ? (item.answer as string[]) : null;
}

/** "keywords": one sentence on a topic that uses every given word. */
export const keywords: Task = {
  name: 'keywords',
  description: 'Write one sentence on a topic that uses every required word.',
  dataset({ size = 6, seed = 0 } = {}) {
    const random = mulberry32(seed);
    return Array.from({ length: size }, (_, i): DatasetItem => {
      const { topic, words } = TOPICS[randomInt(random, TOPICS.length)];
      const pool = [...words];
      const chosen = Array.from({ length: 3 }, () => pool.splice(randomInt(random, pool.length), 1)[0]);
      const content = `Write one sentence about ${topic} that uses all of these words: ${chosen.join(', ')}.`;
      return { id: `keywords-${seed}-${i}`, messages: [{ role: 'user', content }], answer: chosen };
    });
  },
  rewards: [
    {
      name: 'keywords',
      weight: 1,
      score: ({ text, item }) => {
        const words = wordsOf(item);
        if (!words) return null;
        const present = new Set(text.toLowerCase().match(/[a-z]+/g) ?? []);
        return words.filter((w) => present.has(w)).length / words.length;
      },
    },
    {
      name: 'one_sentence',
      weight: 0.5,
      score: ({ text }) => {
        const reply = text.trim();
        const sentences = reply.split(/[.!?]+(?:\s|$)/).filter((s) => s.trim() !== '');
        return sentences.length === 1 && /[.!?]$/.test(reply) && reply.split(/\s+/).length <= 40 ? 1 : 0;
      },
    },
  ],
};
