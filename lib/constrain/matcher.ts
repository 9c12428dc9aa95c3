/**
 * The per-row decoding state: which tokens keep the output a valid prefix, as a bitset over token
 * ids. The state is one DFA state number, so `clone` is free and the mask of a state is computed
 * once per (grammar, vocabulary) and shared by every row and every later request that reaches it.
 */
import { InvalidInputError, UnsupportedError } from '../errors.js';
import { DEAD, type LazyDfa } from './dfa.js';
import type { TokenVocabulary } from './vocabulary.js';

/** Masks kept per (grammar, vocabulary) before the cache starts over: 64 MiB of bitsets. */
const MASK_CACHE_BYTES = 64 * 1024 * 1024;

/** Computes and caches the allowed-token bitset of each DFA state for one vocabulary. */
export class MaskTable {
  private readonly masks = new Map<number, Uint32Array>();
  private readonly capacity: number;
  readonly words: number;
  /** A bitset of the end-of-sequence tokens alone (a finished row may only repeat them). */
  readonly eosOnly: Uint32Array;
  private readonly stateAt: Int32Array;

  constructor(
    readonly dfa: LazyDfa,
    readonly vocabulary: TokenVocabulary,
  ) {
    this.words = (vocabulary.size + 31) >>> 5;
    this.capacity = Math.max(16, Math.floor(MASK_CACHE_BYTES / (4 * this.words)));
    this.eosOnly = new Uint32Array(this.words);
    for (const id of vocabulary.eosIds) this.eosOnly[id >>> 5] |= 1 << (id & 31);
    this.stateAt = new Int32Array(vocabulary.maxLength + 1);
  }

  mask(state: number): Uint32Array {
    let mask = this.masks.get(state);
    if (mask === undefined) {
      mask = this.compute(state);
      if (this.masks.size >= this.capacity) this.masks.clear();
      this.masks.set(state, mask);
    }
    return mask;
  }

  /** One pass over the flattened trie, skipping every subtree whose prefix the DFA rejects. */
  private compute(state: number): Uint32Array {
    const { byte, depth, skip, tokenStart, ids } = this.vocabulary;
    const dfa = this.dfa;
    let transitions = dfa.transitions;
    const words = new Uint32Array(this.words);
    const stateAt = this.stateAt;
    stateAt[0] = state;
    let any = false;
    const n = byte.length;
    let i = 1;
    while (i < n) {
      const d = depth[i];
      const from = stateAt[d - 1];
      let next = transitions[from * 256 + byte[i]];
      if (next < DEAD) {
        next = dfa.next(from, byte[i]);
        transitions = dfa.transitions;
      }
      if (next === DEAD) {
        i = skip[i];
        continue;
      }
      stateAt[d] = next;
      for (let k = tokenStart[i]; k < tokenStart[i + 1]; k++) {
        const id = ids[k];
        words[id >>> 5] |= 1 << (id & 31);
        any = true;
      }
      i++;
    }
    if (dfa.isAccepting(state)) {
      for (let w = 0; w < words.length; w++) words[w] |= this.eosOnly[w];
      any = true;
    }
    if (!any) {
      throw new UnsupportedError(
        'No token of this vocabulary continues the constrained output here: the format needs characters the tokenizer cannot write (for example non-ASCII text with a character vocabulary).',
      );
    }
    return words;
  }
}

/** Where one reply stands in a response grammar: the allowed-token mask for the next token, and `accept(id)` to advance by the token drawn. */
export class TokenMatcher {
  private state: number;
  private finished = false;

  constructor(private readonly table: MaskTable, state = table.dfa.start) {
    this.state = state;
  }

  /**
   * The tokens that may come next, one bit per token id (bit `id & 31` of word `id >>> 5`).
   * End-of-sequence ids are set exactly when the output is complete; after an end-of-sequence
   * token only end-of-sequence ids are. The array is shared with the cache: do not modify it.
   */
  allowed(): Uint32Array {
    return this.finished ? this.table.eosOnly : this.table.mask(this.state);
  }

  /** Advances past `tokenId`; throws if the token was not allowed. */
  accept(tokenId: number): void {
    const vocabulary = this.table.vocabulary;
    if (!Number.isInteger(tokenId) || tokenId < 0 || tokenId >= vocabulary.size) {
      throw new InvalidInputError('tokenId', `${tokenId} is not a token id of this ${vocabulary.size}-token vocabulary.`);
    }
    if (vocabulary.isEos(tokenId)) {
      if (!this.finished && !this.table.dfa.isAccepting(this.state)) {
        throw new InvalidInputError('tokenId', `end-of-sequence token ${tokenId} came before the constrained output was complete.`);
      }
      this.finished = true;
      return;
    }
    if (this.finished) throw new InvalidInputError('tokenId', `token ${tokenId} came after the end-of-sequence token.`);
    const state = this.after(tokenId);
    if (state === DEAD) throw new InvalidInputError('tokenId', `token ${tokenId} does not continue the constrained output.`);
    this.state = state;
  }

  /** Whether `tokenId` may come next: one token checked alone, without the whole mask. */
  canAccept(tokenId: number): boolean {
    const vocabulary = this.table.vocabulary;
    if (!Number.isInteger(tokenId) || tokenId < 0 || tokenId >= vocabulary.size) return false;
    if (vocabulary.isEos(tokenId)) return this.isComplete();
    return !this.finished && this.after(tokenId) !== DEAD;
  }

  private after(tokenId: number): number {
    const bytes = this.table.vocabulary.tokenBytes(tokenId);
    if (bytes.length === 0) return DEAD;
    let state = this.state;
    for (let i = 0; i < bytes.length && state !== DEAD; i++) state = this.table.dfa.next(state, bytes[i]);
    return state;
  }

  /** Whether the output so far is complete (an end-of-sequence token is allowed now). */
  isComplete(): boolean {
    return this.finished || this.table.dfa.isAccepting(this.state);
  }

  /**
   * The fewest bytes that would complete the output from here (0 when complete). With a token
   * budget, an engine can keep only tokens after which this still fits, so a long output is
   * closed in time instead of cut off.
   */
  minBytesToComplete(): number {
    return this.finished ? 0 : this.table.dfa.bytesToAccept(this.state);
  }

  /** Whether an end-of-sequence token has been accepted. */
  isFinished(): boolean {
    return this.finished;
  }

  /** An independent copy (for another row of a group, or to look ahead). */
  clone(): TokenMatcher {
    const copy = new TokenMatcher(this.table, this.state);
    copy.finished = this.finished;
    return copy;
  }
}
