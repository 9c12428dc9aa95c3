/**
 * Argument checks shared by the math functions. Each throws an `InvalidInputError` that names
 * the offending argument and says what was expected, so bad data fails loudly at the boundary
 * instead of turning into NaN three functions later.
 */
import { InvalidInputError } from '../errors.js';

/** B rows of T values: arrays or typed arrays. */
export type Rows<T = number> = readonly ArrayLike<T>[];

export function isArrayLike(value: unknown): value is ArrayLike<unknown> {
  return Array.isArray(value) || (ArrayBuffer.isView(value) && !(value instanceof DataView));
}

export function oneOf<T extends string>(argument: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw new InvalidInputError(argument, `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, got ${describe(value)}.`);
}

export function integerAtLeast(argument: string, value: unknown, min: number): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min) return value;
  throw new InvalidInputError(argument, `must be an integer >= ${min}, got ${describe(value)}.`);
}

/** A finite number, optionally bounded below (inclusive) or strictly above `above`. */
export function finiteNumber(argument: string, value: unknown, bounds: { min?: number; above?: number } = {}): number {
  if (typeof value === 'number' && Number.isFinite(value)) {
    if (bounds.min !== undefined && value < bounds.min) {
      throw new InvalidInputError(argument, `must be >= ${bounds.min}, got ${value}.`);
    }
    if (bounds.above !== undefined && value <= bounds.above) {
      throw new InvalidInputError(argument, `must be > ${bounds.above}, got ${value}.`);
    }
    return value;
  }
  throw new InvalidInputError(argument, `must be a finite number, got ${describe(value)}.`);
}

/**
 * Checks that `rows` is B rows of T values (all rows the same length) and returns [B, T].
 * With `shape`, the rows must have exactly that shape (named after `like`, the reference argument).
 */
export function rowsShape(argument: string, rows: unknown, shape?: readonly [number, number], like = 'logps'): [number, number] {
  if (!isArrayLike(rows)) {
    throw new InvalidInputError(argument, `must be an array of rows (arrays or typed arrays), got ${describe(rows)}.`);
  }
  const b = rows.length;
  if (shape && b !== shape[0]) {
    throw new InvalidInputError(argument, `has ${b} rows but ${like} has ${shape[0]}; give one row per completion.`);
  }
  if (b === 0) throw new InvalidInputError(argument, 'is empty; give at least one row.');
  let t = -1;
  for (let i = 0; i < b; i++) {
    const row = rows[i];
    if (!isArrayLike(row)) {
      throw new InvalidInputError(argument, `row ${i} must be an array or typed array, got ${describe(row)}.`);
    }
    const expected = shape ? shape[1] : t < 0 ? row.length : t;
    if (row.length !== expected) {
      throw new InvalidInputError(
        argument,
        `row ${i} has ${row.length} values but ${shape ? like : `row 0 of ${argument}`} has ${expected} per row; pad every row to the same length and mask the padding.`,
      );
    }
    t = row.length;
  }
  if (t === 0) throw new InvalidInputError(argument, 'rows are empty; give at least one token per row.');
  return [b, t];
}

/** Throws if any value of `rows` is NaN or infinite, naming the first one. */
export function allFinite(argument: string, rows: Rows): void {
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    for (let t = 0; t < row.length; t++) {
      const v = row[t];
      if (typeof v !== 'number' || !Number.isFinite(v)) {
        throw new InvalidInputError(argument, `[${i}][${t}] is ${describe(v)}; every value must be a finite number.`);
      }
    }
  }
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name}`;
  return `a ${typeof value}`;
}
