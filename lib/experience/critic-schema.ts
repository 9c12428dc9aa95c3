/**
 * JSON Schemas for the critic's structured answers in the lessons mode, for critics that can be
 * constrained (`compileResponseFormat({ type: 'json_schema', schema })`, or OpenAI's
 * `response_format`). Each is an object at the top (as strict `json_schema` requires) whose shape
 * `parseLessons` / `parseOperations` already read: `{ "lessons": [...] }` and
 * `{ "operations": [...] }`. Lengths are bounded so a small model's answer always ends.
 *
 * Lesson text starts with a character that is neither whitespace nor `[` and holds no control
 * characters, so `cleanContent` never empties it (it trims, collapses whitespace and strips an
 * echoed `[G3]` label). With `ids`, UPDATE and DELETE can only name entries that exist.
 */
import { DEFAULT_MAX_EXPERIENCE_LENGTH } from './operations.js';

/** One line of text that survives cleaning: a visible first character, no control characters. */
const LESSON_PATTERN = '^[^\\s\\[\\x00-\\x1f][^\\x00-\\x1f]*$';
const ID_PATTERN = '^G[0-9]{1,6}$';

export interface CriticSchemaOptions {
  /** Longest lesson, in characters. Default 200 (entries are capped at 400 when applied). */
  maxLength?: number;
}

export interface CriticOperationsSchemaOptions extends CriticSchemaOptions {
  /** Most operations in one answer. Default 8. */
  maxOperations?: number;
  /** Fewest operations in one answer. Default 0. */
  minOperations?: number;
  /** Whether NONE may be answered (the batch merge leaves it out). Default true. */
  none?: boolean;
  /**
   * The library's entry ids (`G3`, ...): UPDATE and DELETE may name only these, and are left out
   * when the list is empty. Without it any `G<n>` is allowed.
   */
  ids?: readonly string[];
}

export interface CriticLessonsSchemaOptions extends CriticSchemaOptions {
  /** Most lessons in one answer (the critique prompt's `max_lessons`). Default 3. */
  maxLessons?: number;
  /** Fewest lessons in one answer. Default 0. */
  minLessons?: number;
}

function lessonText(maxLength: number) {
  return { type: 'string', minLength: 1, maxLength: Math.min(maxLength, DEFAULT_MAX_EXPERIENCE_LENGTH), pattern: LESSON_PATTERN };
}

/** `{ "lessons": ["...", ...] }`: the group critique's answer. */
export function criticLessonsSchema(options: CriticLessonsSchemaOptions = {}): Record<string, unknown> {
  const { maxLessons = 3, minLessons = 0, maxLength = 200 } = options;
  return {
    type: 'object',
    properties: { lessons: { type: 'array', items: lessonText(maxLength), minItems: Math.min(minLessons, maxLessons), maxItems: maxLessons } },
    required: ['lessons'],
    additionalProperties: false,
  };
}

/** `{ "operations": [{ "operation": "ADD", "content": "..." }, ...] }`: the group update's and the batch merge's answer. */
export function criticOperationsSchema(options: CriticOperationsSchemaOptions = {}): Record<string, unknown> {
  const { maxOperations = 8, minOperations = 0, maxLength = 200, ids, none = true } = options;
  const id = ids === undefined ? { type: 'string', pattern: ID_PATTERN } : { enum: [...new Set(ids)] };
  const content = lessonText(maxLength);
  const shape = (operation: string, properties: Record<string, unknown>) => ({
    type: 'object',
    properties: { operation: { const: operation }, ...properties },
    required: ['operation', ...Object.keys(properties)],
    additionalProperties: false,
  });
  const branches = [shape('ADD', { content })];
  if (ids === undefined || ids.length > 0) branches.push(shape('UPDATE', { id, content }), shape('DELETE', { id }));
  if (none) branches.push(shape('NONE', {}));
  return {
    type: 'object',
    properties: { operations: { type: 'array', items: { anyOf: branches }, minItems: Math.min(minOperations, maxOperations), maxItems: maxOperations } },
    required: ['operations'],
    additionalProperties: false,
  };
}
