/** JSON-format compliance: describe a thing as a JSON object with given keys and value types. */
import { mulberry32, randomInt } from '../math/random.js';
import type { DatasetItem } from '../core/dataset.js';
import type { JsonValue } from '../core/shape.js';
import type { Task } from './types.js';
import { parseJsonReply } from './text.js';

const SUBJECTS: Array<{ subject: string; keys: Record<string, 'string' | 'number' | 'boolean'> }> = [
  { subject: 'a cat', keys: { name: 'string', legs: 'number', sound: 'string' } },
  { subject: 'a city', keys: { name: 'string', country: 'string', population: 'number' } },
  { subject: 'a book', keys: { title: 'string', author: 'string', pages: 'number' } },
  { subject: 'a planet', keys: { name: 'string', moons: 'number', habitable: 'boolean' } },
  { subject: 'a song', keys: { title: 'string', artist: 'string', minutes: 'number' } },
  { subject: 'a car', keys: { make: 'string', doors: 'number', electric: 'boolean' } },
];

function keysOf(item: DatasetItem): Record<string, string> | null {
  const answer = item.answer as { keys?: JsonValue } | undefined;
  return answer && typeof answer.keys === 'object' && answer.keys !== null && !Array.isArray(answer.keys)
    ? (answer.keys as Record<string, string>)
    : null;
}

/** "json-format": describe a thing as a JSON object with the given keys and value types. */
export const jsonFormat: Task = {
  name: 'json-format',
  description: 'Reply with only a JSON object that has the requested keys with the requested value types.',
  dataset({ size = 6, seed = 0 } = {}) {
    const random = mulberry32(seed);
    return Array.from({ length: size }, (_, i): DatasetItem => {
      const { subject, keys } = SUBJECTS[randomInt(random, SUBJECTS.length)];
      const list = Object.entries(keys).map(([k, t]) => `"${k}" (${t})`).join(', ');
      const content = `Describe ${subject} as a JSON object with exactly these keys: ${list}. Reply with the JSON object only.`;
      return { id: `json-format-${seed}-${i}`, messages: [{ role: 'user', content }], answer: { keys } };
    });
  },
  rewards: [
    {
      name: 'valid_json',
      weight: 0.5,
      score: ({ text }) => {
        const parsed = parseJsonReply(text);
        return parsed.ok && typeof parsed.value === 'object' && parsed.value !== null && !Array.isArray(parsed.value) ? 1 : 0;
      },
    },
    {
      // Share of the keys present with the right type, less a share for every extra key.
      name: 'schema',
      weight: 1,
      score: ({ text, item }) => {
        const keys = keysOf(item);
        if (!keys) return null;
        const parsed = parseJsonReply(text);
        if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value)) return 0;
        const value = parsed.value as Record<string, unknown>;
        const wanted = Object.keys(keys);
        const right = wanted.filter((k) => typeof value[k] === keys[k]).length;
        const extra = Object.keys(value).filter((k) => !Object.hasOwn(keys, k)).length;
        return Math.max(0, (right - extra) / wanted.length);
      },
    },
    {
      // Partial credit before the JSON is valid: the key names at least appear, quoted.
      name: 'keys_named',
      weight: 0.25,
      score: ({ text, item }) => {
        const keys = keysOf(item);
        if (!keys) return null;
        const wanted = Object.keys(keys);
        return wanted.filter((k) => text.includes(`"${k}"`)).length / wanted.length;
      },
    },
  ],
};
