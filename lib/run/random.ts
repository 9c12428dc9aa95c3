/**
 * Seeds for everything the loop draws: each (run seed, purpose, epoch, item...) gets its own 32-bit
 * seed, so a resumed run draws exactly what an uninterrupted one would, in any order.
 */
import { mulberry32, shuffleInPlace } from '../math/random.js';

/**
 * A stable 32-bit seed from the parts' text: FNV-1a, then murmur3's finaliser so that parts that
 * differ only at the end (item 3 vs item 4) still give unrelated seeds.
 */
export function deriveSeed(...parts: Array<string | number>): number {
  let hash = 0x811c9dc5;
  const text = parts.join('\u0000');
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

/** Fisher-Yates with a seeded PRNG; returns a new array. */
export function seededShuffle<T>(items: readonly T[], seed: number): T[] {
  return shuffleInPlace(mulberry32(seed), [...items]);
}
