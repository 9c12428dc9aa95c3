/**
 * Sets of Unicode scalar values as sorted, disjoint, non-adjacent `[lo, hi]` ranges, and their
 * UTF-8 encoding as sequences of byte ranges (the construction RE2 and Rust's regex use): a code
 * point range becomes a few sequences like `[E1-EC][80-BF][80-BF]`, each a product of byte ranges,
 * so one automaton edge per byte position covers a whole block of characters.
 */

/** Sorted, disjoint, non-adjacent inclusive ranges of code points. */
export type CharSet = ReadonlyArray<readonly [number, number]>;

export const MAX_CODE_POINT = 0x10ffff;
const SURROGATES: readonly [number, number] = [0xd800, 0xdfff];

/** Every Unicode scalar value (surrogates cannot be encoded in UTF-8). */
export const ANY_CHAR: CharSet = [
  [0, SURROGATES[0] - 1],
  [SURROGATES[1] + 1, MAX_CODE_POINT],
];

export function charRange(lo: number, hi = lo): CharSet {
  return normalize([[lo, hi]]);
}

/** Sorts, merges overlapping or adjacent ranges and removes surrogates. */
export function normalize(ranges: ReadonlyArray<readonly [number, number]>): CharSet {
  const sorted = ranges.filter(([lo, hi]) => lo <= hi).map(([lo, hi]) => [lo, hi] as [number, number]);
  sorted.sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const [lo, hi] of sorted) {
    const last = merged[merged.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else merged.push([lo, hi]);
  }
  return intersect(merged, ANY_CHAR);
}

export function union(...sets: CharSet[]): CharSet {
  return normalize(sets.flat());
}

export function intersect(a: CharSet, b: CharSet): CharSet {
  const out: Array<[number, number]> = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const lo = Math.max(a[i][0], b[j][0]);
    const hi = Math.min(a[i][1], b[j][1]);
    if (lo <= hi) out.push([lo, hi]);
    if (a[i][1] < b[j][1]) i++;
    else j++;
  }
  return out;
}

/** The scalar values not in `set`. */
export function complement(set: CharSet): CharSet {
  const out: Array<[number, number]> = [];
  let next = 0;
  for (const [lo, hi] of set) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return intersect(out, ANY_CHAR);
}

/** One UTF-8 encoding pattern: byte i lies in `[lo[i], hi[i]]`. */
export type ByteSequence = ReadonlyArray<readonly [number, number]>;

const LENGTH_LIMITS = [0x7f, 0x7ff, 0xffff, MAX_CODE_POINT];

/** The UTF-8 byte-range sequences that together encode exactly the code points of `set`. */
export function utf8Sequences(set: CharSet): ByteSequence[] {
  const out: ByteSequence[] = [];
  for (const [lo, hi] of set) {
    let start = lo;
    for (const limit of LENGTH_LIMITS) {
      if (start > hi) break;
      if (start > limit) continue;
      splitRange(start, Math.min(hi, limit), out);
      start = limit + 1;
    }
  }
  return out;
}

/** Splits a range of code points of one encoded length until every byte position is a range. */
function splitRange(lo: number, hi: number, out: ByteSequence[]): void {
  const length = encodedLength(lo);
  for (let i = 1; i < length; i++) {
    const m = (1 << (6 * i)) - 1;
    if ((lo & ~m) !== (hi & ~m)) {
      if ((lo & m) !== 0) {
        splitRange(lo, lo | m, out);
        splitRange((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) !== m) {
        splitRange(lo, (hi & ~m) - 1, out);
        splitRange(hi & ~m, hi, out);
        return;
      }
    }
  }
  const a = encode(lo);
  const b = encode(hi);
  out.push(a.map((byte, k) => [byte, b[k]] as const));
}

function encodedLength(c: number): number {
  return c <= 0x7f ? 1 : c <= 0x7ff ? 2 : c <= 0xffff ? 3 : 4;
}

function encode(c: number): number[] {
  if (c <= 0x7f) return [c];
  if (c <= 0x7ff) return [0xc0 | (c >> 6), 0x80 | (c & 0x3f)];
  if (c <= 0xffff) return [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)];
  return [0xf0 | (c >> 18), 0x80 | ((c >> 12) & 0x3f), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)];
}
