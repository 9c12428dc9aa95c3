/**
 * Text of a token sequence as it grows, one token at a time. Decoding each token alone is wrong
 * for byte-level and SentencePiece tokenizers (a character split across tokens, a leading space
 * that only exists after another token), and decoding the whole prefix every step is quadratic.
 * This is the prefix/read-offset scheme of vLLM's incremental detokenizer: decode a short window
 * ending at the new token, and release text once it no longer ends in an incomplete character.
 */
export type Decode = (ids: number[]) => Promise<string>;

export class IncrementalDetokenizer {
  readonly #decode: Decode;
  readonly #ids: number[] = [];
  /** Start of the window decoded for context. */
  #prefix = 0;
  /** End of the text already released. */
  #read = 0;

  constructor(decode: Decode) {
    this.#decode = decode;
  }

  /** Appends a token and returns the text it releases ('' while a character is still incomplete). */
  async push(id: number): Promise<string> {
    this.#ids.push(id);
    const before = await this.#decode(this.#ids.slice(this.#prefix, this.#read));
    const after = await this.#decode(this.#ids.slice(this.#prefix));
    if (after.length > before.length && !after.endsWith('\uFFFD')) {
      this.#prefix = this.#read;
      this.#read = this.#ids.length;
      return after.slice(before.length);
    }
    return '';
  }
}
