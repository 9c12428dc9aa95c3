/**
 * A tokenizer's vocabulary as a byte trie, flattened in depth-first order: node `i` adds byte
 * `byte[i]` at depth `depth[i]`, its subtree is `i + 1 .. skip[i] - 1`, and the tokens whose bytes
 * end there are `ids[tokenStart[i] .. tokenStart[i + 1] - 1]`. Walking it is one forward pass over
 * flat arrays that jumps over a whole subtree as soon as its prefix is ruled out.
 *
 * Tokens are raw bytes, so a byte-level BPE token that holds half of a UTF-8 character is simply a
 * shorter path. Tokens with no bytes (special and control tokens should be given as empty) are
 * never allowed; end-of-sequence ids are kept out of the trie and allowed only when the output is
 * complete.
 */
import { InvalidInputError } from '../errors.js';

/** A tokenizer's tokens as bytes in a trie, built once per tokenizer, that a grammar's matcher walks to find the allowed tokens. */
export class TokenVocabulary {
  /** Number of token ids (the logits row length). */
  readonly size: number;
  readonly eosIds: readonly number[];
  /** Longest token in bytes. */
  readonly maxLength: number;
  readonly byte: Uint8Array;
  readonly depth: Int32Array;
  readonly skip: Int32Array;
  readonly tokenStart: Int32Array;
  readonly ids: Int32Array;
  private readonly bytes: readonly Uint8Array[];
  private readonly eos: Uint8Array;

  constructor(bytesPerToken: readonly Uint8Array[], eosIds: readonly number[]) {
    this.size = bytesPerToken.length;
    if (eosIds.length === 0) throw new InvalidInputError('eosIds', 'must name at least one end-of-sequence token, or no output could ever finish.');
    for (const id of eosIds) {
      if (!Number.isInteger(id) || id < 0 || id >= this.size) throw new InvalidInputError('eosIds', `${id} is not a token id of this ${this.size}-token vocabulary.`);
    }
    this.eosIds = [...new Set(eosIds)];
    this.eos = new Uint8Array(this.size);
    for (const id of this.eosIds) this.eos[id] = 1;
    this.bytes = bytesPerToken;

    const order: number[] = [];
    for (let id = 0; id < this.size; id++) if (!this.eos[id] && bytesPerToken[id].length > 0) order.push(id);
    order.sort((a, b) => compareBytes(bytesPerToken[a], bytesPerToken[b]));

    // Sorted byte strings give the trie's nodes in depth-first order: each token adds the nodes
    // past its common prefix with the one before it.
    const byte: number[] = [0];
    const depth: number[] = [0];
    const tokenAt: number[] = [];
    const path: number[] = [0];
    let previous: Uint8Array = new Uint8Array(0);
    let maxLength = 0;
    for (const id of order) {
      const b = bytesPerToken[id];
      let common = 0;
      while (common < b.length && common < previous.length && b[common] === previous[common]) common++;
      for (let d = common; d < b.length; d++) {
        path[d + 1] = byte.length;
        byte.push(b[d]);
        depth.push(d + 1);
      }
      tokenAt.push(path[b.length]);
      previous = b;
      maxLength = Math.max(maxLength, b.length);
    }
    const n = byte.length;
    this.byte = Uint8Array.from(byte);
    this.depth = Int32Array.from(depth);
    this.skip = new Int32Array(n);
    const open: number[] = [];
    for (let i = 0; i < n; i++) {
      while (open.length && depth[open[open.length - 1]] >= depth[i]) this.skip[open.pop()!] = i;
      open.push(i);
    }
    for (const i of open) this.skip[i] = n;
    this.tokenStart = new Int32Array(n + 1);
    for (const node of tokenAt) this.tokenStart[node + 1]++;
    for (let i = 0; i < n; i++) this.tokenStart[i + 1] += this.tokenStart[i];
    this.ids = Int32Array.from(order);
    this.maxLength = maxLength;
  }

  /** Trie nodes, the root included. */
  get nodes(): number {
    return this.byte.length;
  }

  isEos(id: number): boolean {
    return this.eos[id] === 1;
  }

  tokenBytes(id: number): Uint8Array {
    return this.bytes[id];
  }
}

/**
 * The vocabulary the matcher walks: `bytesPerToken[id]` is the exact UTF-8 bytes token `id` adds
 * to the output (for byte-level BPE, after undoing the byte-to-character mapping), `eosIds` the
 * tokens that end it.
 */
export function tokenVocabulary(bytesPerToken: readonly Uint8Array[], eosIds: readonly number[]): TokenVocabulary {
  return new TokenVocabulary(bytesPerToken, eosIds);
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}
