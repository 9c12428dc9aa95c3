/**
 * Random decoding over a constrained vocabulary: at every step pick one of the allowed tokens
 * (half of the time one that closes something — a quote, a bracket, a brace, or end-of-sequence —
 * so walks over unbounded formats still end) until end-of-sequence.
 */
import { expect } from 'vitest';
import { isAllowed, type ResponseGrammar } from '../../lib/index.js';
import type { TestVocabulary } from '../fixtures/vocabularies.js';

export interface Walk {
  text: string;
  steps: number;
  finished: boolean;
}

const closers = new WeakMap<TestVocabulary, Uint8Array>();

function closing(tv: TestVocabulary): Uint8Array {
  let flags = closers.get(tv);
  if (!flags) {
    flags = new Uint8Array(tv.bytes.length);
    tv.bytes.forEach((b, id) => {
      if (b.includes(0x22) || b.includes(0x5d) || b.includes(0x7d)) flags![id] = 1;
    });
    for (const id of tv.eosIds) flags[id] = 1;
    closers.set(tv, flags);
  }
  return flags;
}

export function randomWalk(grammar: ResponseGrammar, tv: TestVocabulary, rng: () => number, maxSteps = 5000): Walk {
  const matcher = grammar.matcher(tv.vocabulary);
  const flags = closing(tv);
  const out: number[] = [];
  for (let step = 0; step < maxSteps; step++) {
    const mask = matcher.allowed();
    const allowed: number[] = [];
    const closers: number[] = [];
    for (let id = 0; id < tv.bytes.length; id++) {
      if (!isAllowed(mask, id)) continue;
      allowed.push(id);
      if (flags[id]) closers.push(id);
    }
    // Never a dead end: some token is always allowed, and end-of-sequence exactly when complete.
    expect(allowed.length).toBeGreaterThan(0);
    expect(tv.eosIds.some((id) => isAllowed(mask, id))).toBe(matcher.isComplete());
    const pool = closers.length > 0 && rng() < 0.5 ? closers : allowed;
    const id = pool[Math.floor(rng() * pool.length)];
    matcher.accept(id);
    if (tv.eosIds.includes(id)) {
      const text = new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(out));
      return { text, steps: step + 1, finished: true };
    }
    for (const b of tv.bytes[id]) out.push(b);
  }
  return { text: '', steps: maxSteps, finished: false };
}
