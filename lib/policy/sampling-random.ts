/**
 * Seeded pseudo-random numbers: xoshiro128** seeded through splitmix32. Plain integer arithmetic
 * only (no Math.random, no transcendental functions), so a seed gives the same stream in every
 * JavaScript engine and on every platform; the model builder relies on that for byte-identical
 * weights, the sampler for reproducible groups.
 */

export interface Rng {
  /** Next 32 random bits as an unsigned integer. */
  nextUint32(): number;
  /** Next double, uniform on [0, 1), with 53 random bits. */
  next(): number;
}

/**
 * A generator for `seed` (any safe integer). `stream` selects an independent sequence for the
 * same seed, for example one per row of a group, so rows do not depend on each other's draws.
 */
export function createRng(seed: number, stream = 0): Rng {
  if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be a safe integer, got ${seed}`);
  if (!Number.isSafeInteger(stream) || stream < 0) throw new RangeError(`stream must be a non-negative integer, got ${stream}`);
  // Fold the seed's high and low words and the stream into splitmix32's state.
  let state = (seed >>> 0) ^ Math.imul(Math.floor(seed / 0x1_0000_0000) >>> 0, 0x9e3779b1);
  state = (state ^ Math.imul(stream + 1, 0x85ebca6b)) >>> 0;
  const splitmix = (): number => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let s0 = splitmix();
  let s1 = splitmix();
  let s2 = splitmix();
  let s3 = splitmix();
  if ((s0 | s1 | s2 | s3) === 0) s0 = 1; // the all-zero state is a fixed point

  const nextUint32 = (): number => {
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    return result;
  };
  return {
    nextUint32,
    next: () => ((nextUint32() >>> 5) * 67108864 + (nextUint32() >>> 6)) / 9007199254740992,
  };
}

/** A fresh seed when the caller gave none (the only non-deterministic entry point). */
export function randomSeed(): number {
  return Math.floor(Math.random() * 0x1_0000_0000);
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
