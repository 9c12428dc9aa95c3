/**
 * Serving one chat or text completion request through the session: the whole response as JSON,
 * or server-sent events as tokens arrive. Streamed text is held back by the longest stop string
 * minus one character, so text that turns out to start a stop string is never sent.
 */
import type { ServerResponse } from 'node:http';
import type { Completion, TokenEvent } from '../core/policy.js';
import type { AskInput, Session } from '../session/session.js';
import type { CompletionRecord } from '../store/records/session.js';
import { toApiError } from './api-error.js';
import { EventStream, sendJson } from './http.js';
import { chunk, completionResponse, finishReason, usageChunk, type ResponseContext } from './responses.js';
import type { IncrementalDetokenizer } from './detokenize.js';
import { TokenText, type TokenEntry } from './tokens.js';

export async function respond(res: ServerResponse, ctx: ResponseContext, session: Session, signal: AbortSignal): Promise<void> {
  const { request } = ctx;
  const tokenText = new TokenText(session.policy, request.tokensAsIds);
  const ask: AskInput = {
    ...request.input,
    ...request.sampling,
    n: request.n,
    groupId: ctx.id,
    maxNewTokens: request.maxTokens,
    signal,
    ...(request.topLogprobs > 0 ? { topLogprobs: request.topLogprobs } : {}),
    ...(request.responseFormat ? { responseFormat: request.responseFormat } : {}),
  };

  if (!request.stream) {
    const result = await session.ask(ask);
    const completions = result.completions.map(asCompletion);
    const entries = await Promise.all(
      completions.map((c) => (request.logprobs ? tokenText.entries(c, request.topLogprobs) : null)),
    );
    sendJson(res, 200, completionResponse(ctx, completions, entries, result.usage, result.promptTokenIds));
    return;
  }

  // Headers go out with the first event, so an error before any token (a full queue, bad input
  // the policy caught) still gets its proper status code.
  let stream: EventStream | null = null;
  const send = (data: unknown) => {
    stream ??= new EventStream(res);
    stream.send(data);
  };
  const choices = Array.from({ length: request.n }, (_, index) => new ChoiceStream(ctx, index, tokenText, send));
  try {
    const result = await session.ask({ ...ask, onToken: (event) => choices[event.row]?.token(event) });
    await Promise.all(choices.map((choice, i) => choice.finish(asCompletion(result.completions[i]))));
    if (request.includeUsage) send(usageChunk(ctx, result.usage));
    (stream ?? new EventStream(res)).end();
  } catch (error) {
    // After the headers, the error travels as the stream's last event; the caller still logs it.
    if (stream) (stream as EventStream).end(toApiError(error));
    throw error;
  }
}

function asCompletion(c: CompletionRecord): Completion {
  return {
    text: c.text,
    tokenIds: c.tokenIds,
    logprobs: c.logprobs,
    finishReason: c.finishReason ?? 'eos',
    ...(c.topLogprobs ? { topLogprobs: c.topLogprobs } : {}),
  };
}

interface Released {
  entry: TokenEntry | null;
  /** Length of the choice's text once this token's text is added. */
  end: number;
}

/** The streamed state of one choice: decoded text, what has been sent, and tokens not yet sent. */
class ChoiceStream {
  readonly #ctx: ResponseContext;
  readonly #index: number;
  readonly #tokenText: TokenText;
  readonly #send: (data: unknown) => void;
  readonly #detokenizer: IncrementalDetokenizer | null;
  readonly #stops: string[];
  readonly #holdback: number;
  #text = '';
  #sent = 0;
  readonly #tokens: Released[] = [];
  #sentTokens = 0;
  #started = false;
  #chain: Promise<void> = Promise.resolve();
  #failure: unknown;

  constructor(ctx: ResponseContext, index: number, tokenText: TokenText, send: (data: unknown) => void) {
    this.#ctx = ctx;
    this.#index = index;
    this.#tokenText = tokenText;
    this.#send = send;
    this.#detokenizer = tokenText.detokenizer();
    this.#stops = ctx.request.sampling.stop ?? [];
    this.#holdback = Math.max(0, ...this.#stops.map((s) => s.length - 1));
  }

  /**
   * Called synchronously by the policy; the async decode work queues up in order. A failure is
   * kept for `finish` to throw (an unawaited rejection would take the process down).
   */
  token(event: TokenEvent): void {
    this.#chain = this.#chain.then(() => this.#onToken(event)).catch((error: unknown) => {
      this.#failure ??= error;
    });
  }

  async #onToken(event: TokenEvent): Promise<void> {
    const piece = this.#detokenizer ? await this.#detokenizer.push(event.tokenId) : '';
    this.#text += piece;
    const { logprobs, topLogprobs } = this.#ctx.request;
    const token = this.#detokenizer ? piece : `token_id:${event.tokenId}`;
    const entry = logprobs ? await this.#tokenText.entry(token, event.logprob, event.topLogprobs, topLogprobs) : null;
    this.#tokens.push({ entry, end: this.#text.length });
    this.#release();
  }

  #release(): void {
    let safe = this.#text.length - this.#holdback;
    for (const stop of this.#stops) {
      const at = this.#text.indexOf(stop);
      if (at >= 0) safe = Math.min(safe, at);
    }
    if (safe <= this.#sent) return;
    let upTo = this.#sentTokens;
    while (upTo < this.#tokens.length && this.#tokens[upTo].end <= safe) upTo++;
    this.#emit(this.#text.slice(this.#sent, safe), this.#entries(this.#sentTokens, upTo));
    this.#sent = safe;
    this.#sentTokens = upTo;
  }

  #entries(from: number, to: number): TokenEntry[] {
    return this.#tokens.slice(from, to).flatMap((t) => (t.entry ? [t.entry] : []));
  }

  #emit(text: string, entries: TokenEntry[]): void {
    const role = this.#ctx.request.kind === 'chat' && !this.#started;
    this.#started = true;
    this.#send(chunk(this.#ctx, this.#index, { text, role, entries, textOffset: this.#ctx.promptChars + this.#sent }));
  }

  /** Sends what the final completion has beyond what was streamed (it is authoritative), then the end. */
  async finish(completion: Completion): Promise<void> {
    await this.#chain;
    if (this.#failure !== undefined) throw this.#failure;
    const rest = completion.text.slice(this.#sent);
    let entries: TokenEntry[] = [];
    if (this.#ctx.request.logprobs) {
      const total = completion.logprobs.length;
      // A policy that reports no token events (an HTTP backend) gets its entries from the completion.
      entries =
        this.#tokens.length >= total
          ? this.#entries(this.#sentTokens, total)
          : (await this.#tokenText.entries(completion, this.#ctx.request.topLogprobs)).slice(this.#sentTokens);
    }
    if (rest || entries.length || !this.#started) this.#emit(rest, entries);
    this.#sent = completion.text.length;
    this.#send(chunk(this.#ctx, this.#index, { finish: finishReason(completion.finishReason) }));
  }
}
