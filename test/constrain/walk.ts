/**
 * Random decoding over a constrained vocabulary: at every step pick one of the allowed tokens
 * until end-of-sequence. So that walks over unbounded formats still end, end-of-sequence is taken
 * half of the time it is allowed, a quarter of the steps try a few tokens that would complete the
 * output, and half of the others pick a token that closes something (a quote, bracket or brace).
 * After 200 steps every step takes a token that brings the output nearest to complete.
 */
import { isAllowed, type ResponseGrammar, type TokenMatcher } from '../../lib/method.js';
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

export function randomWalk(grammar: ResponseGrammar, tv: TestVocabulary, rng: () => number, maxSteps = 3000): Walk {
  // After this many steps the walk heads for the end: each token brings completion closer.
  const closeAfter = 200;
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
    if (allowed.length === 0) throw new Error(`no token allowed after ${JSON.stringify(decode(out))}`);
    const eos = tv.eosIds.find((e) => isAllowed(mask, e));
    if ((eos !== undefined) !== matcher.isComplete()) throw new Error(`end-of-sequence allowed ${eos !== undefined}, complete ${matcher.isComplete()}`);
    let id = -1;
    if (eos !== undefined && rng() < 0.5) id = eos;
    else if (step >= closeAfter) id = closest(matcher, tv, allowed, rng);
    else if (rng() < 0.25) id = completing(matcher, allowed, rng);
    if (id < 0) {
      const pool = closers.length > 0 && rng() < 0.5 ? closers : allowed;
      id = pool[Math.floor(rng() * pool.length)];
    }
    matcher.accept(id);
    if (tv.eosIds.includes(id)) {
      return { text: decode(out), steps: step + 1, finished: true };
    }
    for (const b of tv.bytes[id]) out.push(b);
  }
  return { text: '', steps: maxSteps, finished: false };
}

/** Up to 32 random allowed tokens, the first after which the output is complete, or -1. */
function completing(matcher: TokenMatcher, allowed: number[], rng: () => number): number {
  for (let k = 0; k < 32; k++) {
    const id = allowed[Math.floor(rng() * allowed.length)];
    const next = matcher.clone();
    next.accept(id);
    if (next.isComplete()) return id;
  }
  return -1;
}

/** Of the allowed single-byte tokens and 50 other allowed ones, one that leaves the fewest bytes to write. */
function closest(matcher: TokenMatcher, tv: TestVocabulary, allowed: number[], rng: () => number): number {
  const candidates = allowed.filter((id) => tv.bytes[id].length === 1);
  for (let k = 0; k < 50; k++) candidates.push(allowed[Math.floor(rng() * allowed.length)]);
  let best = -1;
  let bestDistance = Infinity;
  for (const id of candidates) {
    const next = matcher.clone();
    next.accept(id);
    const distance = next.minBytesToComplete();
    if (distance < bestDistance) [best, bestDistance] = [id, distance];
  }
  return best;
}

/** Strict UTF-8; a leading U+FEFF is text here (`\s` matches it), not a byte-order mark to drop. */
function decode(bytes: number[]): string {
  return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Uint8Array.from(bytes));
}
