/** OpenAI response shapes for chat and text completions, whole and streamed. */
import type { Completion, FinishReason, Usage } from '../core/policy.js';
import type { GenerationRequest } from './requests.js';
import type { TokenEntry } from './tokens.js';

export type OpenAiFinishReason = 'stop' | 'length';

/** OpenAI has one reason for both an end-of-sequence token and a stop string. */
export function finishReason(reason: FinishReason): OpenAiFinishReason {
  return reason === 'length' ? 'length' : 'stop';
}

export interface ResponseContext {
  id: string;
  created: number;
  model: string;
  request: GenerationRequest;
  /** Prompt length in characters, where the legacy API's `text_offset` starts. */
  promptChars: number;
}

export function usageOf(usage: Usage) {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
  };
}

/** `logprobs` of a chat choice or chunk. */
export function chatLogprobs(entries: TokenEntry[]) {
  return { content: entries, refusal: null };
}

/** `logprobs` of a legacy completion choice or chunk: parallel arrays, alternatives as token -> log-prob. */
export function textLogprobs(entries: TokenEntry[], top: number, startOffset: number) {
  let offset = startOffset;
  const textOffset = entries.map((e) => {
    const at = offset;
    offset += e.token.length;
    return at;
  });
  return {
    tokens: entries.map((e) => e.token),
    token_logprobs: entries.map((e) => e.logprob),
    top_logprobs: top > 0 ? entries.map((e) => Object.fromEntries(e.top_logprobs.map((t) => [t.token, t.logprob]))) : null,
    text_offset: textOffset,
  };
}

/** The fields every response and chunk opens with. */
function header(ctx: ResponseContext, streamed: boolean) {
  const chat = streamed ? 'chat.completion.chunk' : 'chat.completion';
  return { id: ctx.id, object: ctx.request.kind === 'chat' ? chat : 'text_completion', created: ctx.created, model: ctx.model };
}

/** A choice's `logprobs` in its API's shape (the legacy one's offsets start at `textOffset`), null without entries. */
function logprobsOf(ctx: ResponseContext, entries: TokenEntry[] | null | undefined, textOffset: number) {
  if (!entries) return null;
  return ctx.request.kind === 'chat' ? chatLogprobs(entries) : textLogprobs(entries, ctx.request.topLogprobs, textOffset);
}

export function completionResponse(
  ctx: ResponseContext,
  completions: Completion[],
  entries: (TokenEntry[] | null)[],
  usage: Usage,
  promptTokenIds: number[],
) {
  const ids = ctx.request.returnTokenIds;
  const chat = ctx.request.kind === 'chat';
  return {
    ...header(ctx, false),
    choices: completions.map((c, index) => ({
      index,
      ...(chat ? { message: { role: 'assistant', content: c.text, refusal: null, annotations: [] } } : { text: c.text }),
      logprobs: logprobsOf(ctx, entries[index], ctx.promptChars),
      finish_reason: finishReason(c.finishReason),
      ...(ids ? { token_ids: c.tokenIds } : {}),
    })),
    usage: usageOf(usage),
    ...(ids ? { prompt_token_ids: promptTokenIds } : {}),
  };
}

/** One streamed chunk for one choice: new text and its tokens, or the end of the choice. */
export function chunk(
  ctx: ResponseContext,
  index: number,
  part: { text?: string; role?: boolean; entries?: TokenEntry[]; textOffset?: number; finish?: OpenAiFinishReason },
) {
  const delta: Record<string, string> = {};
  if (part.role) delta.role = 'assistant';
  if (part.text !== undefined) delta.content = part.text;
  const logprobs = ctx.request.logprobs ? logprobsOf(ctx, part.entries, part.textOffset ?? ctx.promptChars) : null;
  return {
    ...header(ctx, true),
    choices: [{ index, ...(ctx.request.kind === 'chat' ? { delta } : { text: part.text ?? '' }), logprobs, finish_reason: part.finish ?? null }],
    ...(ctx.request.includeUsage ? { usage: null } : {}),
  };
}

/** The last chunk of a stream with `stream_options.include_usage`: no choices, the usage. */
export function usageChunk(ctx: ResponseContext, usage: Usage) {
  return { ...header(ctx, true), choices: [], usage: usageOf(usage) };
}
