/** Token strings for OpenAI's `logprobs`: each token's own text, its UTF-8 bytes and its alternatives. */
import type { Completion, Policy, TopLogprob } from '../core/policy.js';
import { IncrementalDetokenizer } from './detokenize.js';

export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

export interface TokenEntry extends TokenLogprob {
  top_logprobs: TokenLogprob[];
}

const encoder = new TextEncoder();

/** OpenAI writes -inf log-probs as -9999 so every client can parse them as numbers. */
export function finiteLogprob(x: number): number {
  return Number.isFinite(x) ? x : -9999;
}

/**
 * Per request: token text through the policy's tokenizer, or `token_id:<id>` (vLLM's
 * `return_tokens_as_token_ids`) when asked for or when the policy cannot decode.
 */
export class TokenText {
  readonly #decode: ((ids: number[]) => Promise<string>) | undefined;
  readonly #single = new Map<number, Promise<string>>();

  constructor(policy: Policy, asIds: boolean) {
    this.#decode = asIds || !policy.decode ? undefined : (ids) => policy.decode!(ids);
  }

  /** A detokenizer for one growing sequence, or null when tokens are written as ids. */
  detokenizer(): IncrementalDetokenizer | null {
    return this.#decode ? new IncrementalDetokenizer(this.#decode) : null;
  }

  /** The text of one token on its own (for alternatives), cached. */
  single(id: number): Promise<string> {
    if (!this.#decode) return Promise.resolve(`token_id:${id}`);
    let text = this.#single.get(id);
    if (!text) {
      text = this.#decode([id]);
      this.#single.set(id, text);
    }
    return text;
  }

  /** One entry per token of `completion`, `top` alternatives each. */
  async entries(completion: Completion, top: number): Promise<TokenEntry[]> {
    const detokenizer = this.detokenizer();
    const entries: TokenEntry[] = [];
    for (let t = 0; t < completion.logprobs.length; t++) {
      const id = completion.tokenIds[t];
      const token = id === undefined ? '' : detokenizer ? await detokenizer.push(id) : `token_id:${id}`;
      entries.push(await this.entry(token, completion.logprobs[t], top > 0 ? completion.topLogprobs?.[t] : undefined, top));
    }
    return entries;
  }

  async entry(token: string, logprob: number, alternatives: TopLogprob[] | undefined, top: number): Promise<TokenEntry> {
    const topLogprobs = await Promise.all(
      (alternatives ?? []).slice(0, top).map(async (a) => {
        const text = await this.single(a.tokenId);
        return { token: text, logprob: finiteLogprob(a.logprob), bytes: [...encoder.encode(text)] };
      }),
    );
    return { token, logprob: finiteLogprob(logprob), bytes: [...encoder.encode(token)], top_logprobs: topLogprobs };
  }
}
