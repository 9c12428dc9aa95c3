/**
 * Seeded pseudo-random numbers. Every random choice in webgrpo (sampling, routing, shuffling)
 * takes an `Rng`, so a run is reproducible from its seed and tests can inject their own source.
 */

/** A source of uniform floats in [0, 1), like `Math.random`. */
export type Rng = () => number;

/**
 * mulberry32 (Tommy Ettinger): a 32-bit state generator with period 2^32 that passes
 * gjrand/PractRand to several GB. Returns floats in [0, 1) on a 2^-32 grid, plenty for sampling
 * tokens or routes; it is not cryptographic. Any number is a valid seed (it is reduced to 32 bits).
 */
export function mulberry32(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 4294967296;
  };
}

/** A uniform integer in [0, n). */
export function randomInt(rng: Rng, n: number): number {
  return Math.min(n - 1, Math.floor(rng() * n));
}

/** Fisher-Yates in place, drawing from `rng`; returns the same array. */
export function shuffleInPlace<T>(rng: Rng, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = randomInt(rng, i + 1);
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}
