/**
 * The shape checks every validator of stored data builds on: each throws an `InvalidInputError`
 * whose `argument` is the path to the bad field, or returns the value as its type.
 */
import { InvalidInputError } from '../errors.js';

export type Obj = Record<string, unknown>;
/** Plain JSON data: what stored records and dataset answers hold. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A document given as an object or as its JSON text: the parsed value (JSON text that does not parse is an `InvalidInputError` at `at`). */
export function parsedJson(data: unknown, at: string): unknown {
  if (typeof data !== 'string') return data;
  try {
    return JSON.parse(data);
  } catch (error) {
    throw new InvalidInputError(at, `is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
}

export function fail(at: string, message: string): never {
  throw new InvalidInputError(at, message);
}
export function obj(value: unknown, at: string): Obj {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(at, 'expected an object.');
  return value as Obj;
}
export function arr(value: unknown, at: string): unknown[] {
  if (!Array.isArray(value)) fail(at, 'expected an array.');
  return value;
}
export function str(value: unknown, at: string): string {
  if (typeof value !== 'string') fail(at, 'expected a string.');
  return value;
}
export function num(value: unknown, at: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(at, 'expected a finite number.');
  return value;
}
export function int(value: unknown, at: string, min = 0): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) fail(at, `expected an integer >= ${min}.`);
  return value;
}
export function bool(value: unknown, at: string): boolean {
  if (typeof value !== 'boolean') fail(at, 'expected true or false.');
  return value;
}
export function oneOf<T extends string>(value: unknown, options: readonly T[], at: string): T {
  if (!options.includes(value as T)) fail(at, `expected one of ${options.map((o) => `"${o}"`).join(', ')}.`);
  return value as T;
}
export function nullableNum(value: unknown, at: string): void {
  if (value !== null) num(value, at);
}

/** Plain JSON data (no functions, class instances or non-finite numbers), at most 64 levels deep. */
export function isJson(value: unknown, depth = 0): value is JsonValue {
  if (depth > 64) return false;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((v) => isJson(v, depth + 1));
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value);
    return (proto === Object.prototype || proto === null) && Object.values(value).every((v) => isJson(v, depth + 1));
  }
  return false;
}
