/**
 * One row of a group while it decodes: its tokens and log-probs, and when and why it stops. A row
 * ends at an end-of-sequence token (kept in `tokenIds`, left out of `text`), at a stop string (the
 * text is cut before it; the tokens stop with the one that completed it), at `maxNewTokens`, or on
 * abort. Nothing sampled after the end is ever recorded.
 */
import type { Rng } from '../../math/random.js';
import type { TokenMatcher } from '../../constrain/matcher.js';
import type { TokenVocabulary } from '../../constrain/vocabulary.js';
import type { SampledToken } from '../sampling.js';
import { rowMask } from './constrained-row.js';
import type { Completion, FinishReason, TopLogprob } from '../../core/policy.js';

export interface StopRules {
  eosIds: ReadonlySet<number>;
  stop: readonly string[];
  maxNewTokens: number;
  /** Alternatives to report per token; 0 or absent: none. */
  topLogprobs?: number;
  /** Token ids to text, special tokens skipped. */
  decode(ids: number[]): string;
  /** A constrained output: the matcher each row starts from (cloned per row) and its vocabulary. */
  constraint?: { matcher: TokenMatcher; vocabulary: TokenVocabulary };
}

export class RowDecoder {
  readonly tokenIds: number[] = [];
  readonly logprobs: number[] = [];
  readonly sampledLogprobs: number[] = [];
  /** Filled when the request asked for `topLogprobs`. */
  readonly topLogprobs: TopLogprob[][] = [];
  finishReason?: FinishReason;
  private cut = -1;
  private checkedLength = 0;
  private readonly matcher: TokenMatcher | undefined;

  constructor(
    readonly row: number,
    readonly rng: Rng,
    private readonly rules: StopRules,
  ) {
    this.matcher = rules.constraint?.matcher.clone();
  }

  /** The tokens this row may sample next; undefined when unconstrained. */
  allowed(): Uint32Array | undefined {
    const { matcher } = this;
    return matcher && rowMask(matcher, this.rules.constraint!.vocabulary, this.rules.maxNewTokens - this.tokenIds.length);
  }

  get running(): boolean {
    return this.finishReason === undefined;
  }

  get lastToken(): number {
    return this.tokenIds[this.tokenIds.length - 1];
  }

  push(token: SampledToken, top?: TopLogprob[]): void {
    if (top) this.topLogprobs.push(top);
    this.matcher?.accept(token.tokenId);
    this.tokenIds.push(token.tokenId);
    this.logprobs.push(token.logprob);
    this.sampledLogprobs.push(token.sampledLogprob);
    if (this.rules.eosIds.has(token.tokenId)) this.finishReason = 'eos';
    else if (this.hitStopString()) this.finishReason = 'stop';
    else if (this.tokenIds.length >= this.rules.maxNewTokens) this.finishReason = 'length';
  }

  abort(): void {
    this.finishReason ??= 'abort';
  }

  completion(): Completion {
    const finishReason = this.finishReason ?? 'abort';
    const textIds = finishReason === 'eos' ? this.tokenIds.slice(0, -1) : this.tokenIds;
    const text = this.decode(textIds);
    return {
      text: this.cut >= 0 ? text.slice(0, this.cut) : text,
      tokenIds: this.tokenIds,
      logprobs: this.logprobs,
      sampledLogprobs: this.sampledLogprobs,
      finishReason,
      ...(this.topLogprobs.length > 0 || this.rules.topLogprobs ? { topLogprobs: this.topLogprobs } : {}),
    };
  }

  private hitStopString(): boolean {
    if (this.rules.stop.length === 0) return false;
    const text = this.decode(this.tokenIds);
    // Only the tail can hold a stop string that was not there one token ago.
    const longest = Math.max(...this.rules.stop.map((s) => s.length));
    const from = Math.max(0, this.checkedLength - longest + 1);
    this.checkedLength = text.length;
    let cut = -1;
    for (const stop of this.rules.stop) {
      const at = text.indexOf(stop, from);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    this.cut = cut;
    return cut >= 0;
  }

  private decode(ids: number[]): string {
    return ids.length === 0 ? '' : this.rules.decode(ids);
  }
}
