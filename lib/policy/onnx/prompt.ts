/**
 * Prompt text or chat messages to token ids, as TRL prepares them: chat messages through the
 * tokenizer's chat template with the generation prompt appended; plain text without added special
 * tokens.
 */
import { InvalidInputError } from '../../errors.js';
import type { ChatMessage, PromptInput } from '../../core/policy.js';

export interface PromptTokenizer {
  encode(text: string, options: { add_special_tokens: boolean }): number[];
  apply_chat_template(messages: ChatMessage[], options: Record<string, unknown>): unknown;
  readonly chat_template: unknown;
}

const ROLES = new Set(['system', 'user', 'assistant']);

export function promptTokenIds(tokenizer: PromptTokenizer, input: PromptInput): number[] {
  const { prompt, messages } = input;
  if (prompt !== undefined && messages !== undefined) {
    throw new InvalidInputError('prompt', 'give either `prompt` or `messages`, not both.');
  }
  let ids: number[];
  if (messages !== undefined) {
    if (!Array.isArray(messages) || messages.length === 0) {
      throw new InvalidInputError('messages', 'must be a non-empty array of { role, content } messages.');
    }
    messages.forEach((message, i) => {
      if (!message || !ROLES.has(message.role) || typeof message.content !== 'string') {
        throw new InvalidInputError(`messages[${i}]`, 'must be { role: "system" | "user" | "assistant", content: string }.');
      }
    });
    if (!tokenizer.chat_template) {
      throw new InvalidInputError('messages', 'this model has no chat template; pass the rendered text as `prompt` instead.');
    }
    ids = tokenizer.apply_chat_template(messages, {
      add_generation_prompt: true,
      tokenize: true,
      return_tensor: false,
      return_dict: false,
    }) as number[];
  } else {
    if (typeof prompt !== 'string') throw new InvalidInputError('prompt', 'is required: pass `prompt` (text) or `messages`.');
    if (prompt.length === 0) throw new InvalidInputError('prompt', 'must not be empty.');
    ids = tokenizer.encode(prompt, { add_special_tokens: false });
  }
  if (ids.length === 0) throw new InvalidInputError('prompt', 'encodes to no tokens; give some text.');
  return ids;
}
