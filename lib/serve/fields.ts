/**
 * Typed reads of request fields. Unknown fields are ignored (clients send many we do not use);
 * known fields of the wrong type or out of range are a 400 naming the field.
 */
import { badField, ApiError } from './api-error.js';

export type Body = Record<string, unknown>;

export function asBody(value: unknown): Body {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ApiError(400, 'The request body must be a JSON object.', { code: 'invalid_json' });
  }
  return value as Body;
}

function present(body: Body, key: string): boolean {
  return body[key] !== undefined && body[key] !== null;
}

/**
 * Longest name-like string field (a model, a group id): each is copied into logs, responses and
 * stored records, so none may take the whole body.
 */
export const MAX_NAME_LENGTH = 256;
/** Longest `stop` string: a stream holds back the longest one minus one character. */
export const MAX_STOP_LENGTH = 256;
/**
 * Text fields (prompts, message contents, told completions) are bounded by the body limit and, once
 * tokenized, by the model's context: they pass this as their cap.
 */
export const TEXT = Infinity;

export function optionalString(body: Body, key: string, maxLength = MAX_NAME_LENGTH): string | undefined {
  if (!present(body, key)) return undefined;
  const value = body[key];
  if (typeof value !== 'string') throw badField(key, `must be a string, got ${typeName(value)}.`, 'invalid_type');
  checkLength(key, value, maxLength);
  return value;
}

/** A 400 for a string over `maxLength` characters. */
export function checkLength(key: string, value: string, maxLength: number): void {
  if (value.length > maxLength) throw badField(key, `must be at most ${maxLength} characters, got ${value.length}.`, 'string_above_max_length');
}

export function requiredString(body: Body, key: string): string {
  const value = optionalString(body, key, MAX_NAME_LENGTH);
  if (value === undefined) throw badField(key, 'is required.', 'missing_required_parameter');
  return value;
}

export function optionalBoolean(body: Body, key: string): boolean | undefined {
  if (!present(body, key)) return undefined;
  if (typeof body[key] !== 'boolean') throw badField(key, `must be true or false, got ${typeName(body[key])}.`, 'invalid_type');
  return body[key] as boolean;
}

export function optionalNumber(body: Body, key: string, range: { min?: number; max?: number; above?: number } = {}): number | undefined {
  if (!present(body, key)) return undefined;
  const value = body[key];
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw badField(key, `must be a number, got ${typeName(value)}.`, 'invalid_type');
  }
  checkRange(key, value, range);
  return value;
}

export function optionalInteger(body: Body, key: string, range: { min?: number; max?: number } = {}): number | undefined {
  if (!present(body, key)) return undefined;
  const value = body[key];
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw badField(key, `must be an integer, got ${typeName(value)}.`, 'invalid_type');
  }
  checkRange(key, value, range);
  return value;
}

function checkRange(key: string, value: number, range: { min?: number; max?: number; above?: number }): void {
  if (range.min !== undefined && value < range.min) throw badField(key, `must be >= ${range.min}, got ${value}.`);
  if (range.above !== undefined && value <= range.above) throw badField(key, `must be > ${range.above}, got ${value}.`);
  if (range.max !== undefined && value > range.max) throw badField(key, `must be <= ${range.max}, got ${value}.`);
}

/** `stop`: a string or a list of up to `max` non-empty strings. */
export function stopStrings(body: Body, max: number): string[] | undefined {
  if (!present(body, 'stop')) return undefined;
  const value = body.stop;
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) {
    throw badField('stop', `must be a string or an array of strings, got ${typeName(value)}.`, 'invalid_type');
  }
  if (list.length > max) throw badField('stop', `takes at most ${max} strings, got ${list.length}.`);
  if (list.some((s) => s === '')) throw badField('stop', 'strings must not be empty.');
  for (const s of list) checkLength('stop', s, MAX_STOP_LENGTH);
  return list.length ? list : undefined;
}

/**
 * Fields this server cannot honour: absent, null or their neutral value pass; anything else is a
 * 400, never silently ignored (a client asking for a penalty should know it did not get one).
 */
export function rejectUnsupported(body: Body, neutral: Record<string, (value: unknown) => boolean>): void {
  for (const [key, isNeutral] of Object.entries(neutral)) {
    if (present(body, key) && !isNeutral(body[key])) {
      throw badField(key, 'is not supported by this server; remove it or send its neutral value.', 'unsupported_parameter');
    }
  }
}

export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)?.slice(0, 40)}`;
}
