/**
 * Bringing outside libraries in: `normalizeExperienceLibrary` accepts every form a library comes in
 * (ours, the @polyweave/grpo tool's exemplar list, the paper's `{ "G0": "..." }` map, plain strings) and returns a
 * valid `ExperienceLibrary`, or throws an `InvalidInputError` that names the offending field.
 */
import { InvalidInputError } from '../errors.js';
import { cleanContent, DEFAULT_MAX_EXPERIENCE_LENGTH } from './operations.js';
import type { ExemplarEntry, ExperienceEntry, ExperienceLibrary } from './types.js';

export interface NormalizeLibraryOptions {
  /** Longest lesson kept, in characters. Default 400. */
  maxLength?: number;
  /** Name used in error messages. Default `initialExperiences`. */
  argument?: string;
}

/**
 * Accepts:
 *  - `undefined` / `null`: an empty library;
 *  - an `ExperienceLibrary` (`{ nextId, entries, exemplars }`), validated and copied;
 *  - an array mixing lesson strings, `{ text, id? }` lessons and the @polyweave/grpo tool's `{ item, output, score }`
 *    exemplars (items and outputs that are not strings are stored as their JSON);
 *  - an object map `{ "G0": "lesson", ... }` (the paper's experiences.json).
 * Lessons keep a valid `G<n>` id they bring; others get fresh ids. Exemplars of the same item keep the
 * best score. Entries brought in this way count as step 0.
 */
export function normalizeExperienceLibrary(input: unknown, options: NormalizeLibraryOptions = {}): ExperienceLibrary {
  const argument = options.argument ?? 'initialExperiences';
  const maxLength = options.maxLength ?? DEFAULT_MAX_EXPERIENCE_LENGTH;
  if (input === undefined || input === null) return { nextId: 0, entries: [], exemplars: [] };
  if (isLibraryShape(input)) return validateLibrary(input, argument);

  let values: Array<{ key?: string; value: unknown }>;
  if (Array.isArray(input)) values = input.map((value) => ({ value }));
  else if (typeof input === 'object') values = Object.entries(input as Record<string, unknown>).map(([key, value]) => ({ key, value }));
  else throw new InvalidInputError(argument, `expected an array or object of experiences, got ${typeof input}.`);

  const lessons: Array<{ wanted?: string; text: string }> = [];
  const exemplars: Array<{ wanted?: string; item: string; output: string; score: number }> = [];
  values.forEach(({ key, value }, i) => {
    const at = key !== undefined ? `${argument}.${key}` : `${argument}[${i}]`;
    if (typeof value === 'string') {
      const { text } = cleanContent(value, maxLength);
      if (text !== '') lessons.push({ wanted: key, text });
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new InvalidInputError(at, 'expected a lesson string, { text } or { item, output, score }.');
    }
    const record = value as Record<string, unknown>;
    if ('output' in record || 'item' in record || 'score' in record) {
      const score = record.score;
      if (typeof score !== 'number' || !Number.isFinite(score)) throw new InvalidInputError(`${at}.score`, 'expected a finite number.');
      if (record.output === undefined) throw new InvalidInputError(`${at}.output`, 'is missing.');
      const wanted = typeof record.id === 'string' ? record.id : key;
      exemplars.push({ wanted, item: asText(record.item), output: asText(record.output), score });
      return;
    }
    const text = record.text ?? record.content ?? record.experience;
    if (typeof text !== 'string') throw new InvalidInputError(`${at}.text`, 'expected a string.');
    const cleaned = cleanContent(text, maxLength).text;
    if (cleaned !== '') lessons.push({ wanted: typeof record.id === 'string' ? record.id : key, text: cleaned });
  });

  // Ids: keep a well-formed, unused one; number the rest after the largest kept.
  const used = new Set<string>();
  const keep = (wanted: string | undefined, prefix: 'G' | 'E'): string | undefined => {
    const id = wanted?.trim().toUpperCase();
    if (id && new RegExp(`^${prefix}\\d+$`).test(id) && !used.has(id)) {
      used.add(id);
      return id;
    }
    return undefined;
  };
  const lessonIds = lessons.map((l) => keep(l.wanted, 'G'));
  const best = new Map<string, number>();
  exemplars.forEach((e, i) => {
    const j = best.get(e.item);
    if (j === undefined || e.score > exemplars[j].score) best.set(e.item, i);
  });
  const bestIndices = new Set(best.values());
  const keptExemplars = exemplars.filter((_, i) => bestIndices.has(i));
  const exemplarIds = keptExemplars.map((e) => keep(e.wanted, 'E'));
  let nextId = 1 + Math.max(-1, ...[...used].map((id) => Number(id.slice(1))));
  const fresh = (prefix: 'G' | 'E') => `${prefix}${nextId++}`;

  const entries: ExperienceEntry[] = lessons.map((l, i) => ({ id: lessonIds[i] ?? fresh('G'), text: l.text, createdStep: 0, updatedStep: 0 }));
  const kept: ExemplarEntry[] = keptExemplars.map((e, i) => ({
    id: exemplarIds[i] ?? fresh('E'),
    item: e.item,
    output: e.output,
    score: e.score,
    createdStep: 0,
    updatedStep: 0,
  }));
  return { nextId, entries, exemplars: kept };
}

function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  return JSON.stringify(value);
}

function isLibraryShape(input: unknown): input is Record<string, unknown> {
  return typeof input === 'object' && input !== null && !Array.isArray(input) && 'nextId' in input && 'entries' in input;
}

/**
 * Checks that a value is a well-formed `ExperienceLibrary` (ids unique and below `nextId`, texts
 * non-empty one-line strings, steps non-negative integers) and returns a deep copy of it.
 */
export function validateLibrary(value: unknown, argument = 'library'): ExperienceLibrary {
  if (!isLibraryShape(value)) throw new InvalidInputError(argument, 'expected { nextId, entries, exemplars }.');
  const { nextId, entries, exemplars = [] } = value as { nextId: unknown; entries: unknown; exemplars?: unknown };
  if (!isCount(nextId)) throw new InvalidInputError(`${argument}.nextId`, 'expected a non-negative integer.');
  if (!Array.isArray(entries)) throw new InvalidInputError(`${argument}.entries`, 'expected an array.');
  if (!Array.isArray(exemplars)) throw new InvalidInputError(`${argument}.exemplars`, 'expected an array.');
  const ids = new Set<string>();
  const checkId = (id: unknown, prefix: string, at: string): string => {
    if (typeof id !== 'string' || !new RegExp(`^${prefix}\\d+$`).test(id)) throw new InvalidInputError(`${at}.id`, `expected "${prefix}<n>".`);
    if (ids.has(id)) throw new InvalidInputError(`${at}.id`, `${id} appears twice.`);
    if (Number(id.slice(1)) >= nextId) throw new InvalidInputError(`${at}.id`, `${id} is not below nextId ${nextId}.`);
    ids.add(id);
    return id;
  };
  const steps = (record: Record<string, unknown>, at: string) => {
    if (!isCount(record.createdStep)) throw new InvalidInputError(`${at}.createdStep`, 'expected a non-negative integer.');
    if (!isCount(record.updatedStep)) throw new InvalidInputError(`${at}.updatedStep`, 'expected a non-negative integer.');
    return { createdStep: record.createdStep, updatedStep: record.updatedStep };
  };
  const lessons = entries.map((entry, i): ExperienceEntry => {
    const at = `${argument}.entries[${i}]`;
    if (typeof entry !== 'object' || entry === null) throw new InvalidInputError(at, 'expected an object.');
    const record = entry as Record<string, unknown>;
    const id = checkId(record.id, 'G', at);
    if (typeof record.text !== 'string' || record.text.trim() === '' || /[\r\n]/.test(record.text)) {
      throw new InvalidInputError(`${at}.text`, 'expected a non-empty one-line string.');
    }
    return { id, text: record.text, ...steps(record, at) };
  });
  const examples = exemplars.map((entry, i): ExemplarEntry => {
    const at = `${argument}.exemplars[${i}]`;
    if (typeof entry !== 'object' || entry === null) throw new InvalidInputError(at, 'expected an object.');
    const record = entry as Record<string, unknown>;
    const id = checkId(record.id, 'E', at);
    if (typeof record.item !== 'string') throw new InvalidInputError(`${at}.item`, 'expected a string.');
    if (typeof record.output !== 'string' || record.output === '') throw new InvalidInputError(`${at}.output`, 'expected a non-empty string.');
    if (typeof record.score !== 'number' || !Number.isFinite(record.score)) throw new InvalidInputError(`${at}.score`, 'expected a finite number.');
    return { id, item: record.item, output: record.output, score: record.score, ...steps(record, at) };
  });
  return { nextId, entries: lessons, exemplars: examples };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}
