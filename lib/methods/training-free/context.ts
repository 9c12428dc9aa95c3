/**
 * The rollout prompts' fit in the policy's context, checked when a run starts. A training-free
 * prompt grows as the library fills: at most `experienceTokenBudget` tokens of experiences, the
 * template around them, the item, the chat markup, and `maxNewTokens` of reply. A run whose
 * longest such prompt cannot fit would die at the step where the library outgrows the context;
 * this refuses it before anything is stored, naming the numbers.
 */
import { InvalidInputError } from '../../errors.js';
import { fillTemplate, mapPromptText } from '../../experience/render.js';
import type { Policy, PromptInput } from '../../core/policy.js';
import type { DatasetItem } from '../../core/dataset.js';
import type { TrainingFreeConfig } from './record.js';
import { promptOf } from '../../run/rollout.js';
import { MARKUP_TOKENS, MARKUP_TOKENS_PER_MESSAGE } from './budget.js';

type Sizes = Pick<TrainingFreeConfig, 'experienceTokenBudget' | 'maxNewTokens'>;

/** The experiences' budget and the reply alone must leave room in the context (no tokenizer needed). */
export function checkBudgetFits(config: Sizes, context: number | undefined): void {
  if (context === undefined || !Number.isFinite(context)) return;
  const { experienceTokenBudget: budget, maxNewTokens } = config;
  if (budget + maxNewTokens + MARKUP_TOKENS >= context) {
    throw new InvalidInputError(
      'experienceTokenBudget',
      `${budget} tokens of experiences plus maxNewTokens ${maxNewTokens} plus ${MARKUP_TOKENS} of chat markup is ${budget + maxNewTokens + MARKUP_TOKENS}, ` +
        `which leaves no room for the task in the policy's context of ${context} tokens; ` +
        `set experienceTokenBudget to at most ${Math.max(0, context - maxNewTokens - MARKUP_TOKENS - 1 - 64)} (room for a 64-token task) or lower maxNewTokens.`,
    );
  }
}

/**
 * Every item's prompt with a full library must fit: the template filled with the item and no
 * experiences, counted with the policy's tokenizer (UTF-8 bytes without one, at least as many),
 * plus a chat-markup allowance per message, the experiences' budget and the reply.
 */
export async function checkPromptsFit(config: Sizes & Pick<TrainingFreeConfig, 'templates'>, policy: Policy, items: readonly DatasetItem[], where = 'dataset'): Promise<void> {
  const context = policy.info.maxPositions;
  if (context === undefined || !Number.isFinite(context)) return;
  const count = policy.encode ? async (text: string) => (await policy.encode!(text)).length : async (text: string) => new TextEncoder().encode(text).length;
  let longest: { index: number; tokens: number } | undefined;
  for (const [index, item] of items.entries()) {
    const prompt = mapPromptText(promptOf(item), (text) => fillTemplate(config.templates.prompt, { experiences: '', prompt: text }));
    const tokens = (await promptTokens(prompt, count)) + config.experienceTokenBudget + config.maxNewTokens;
    if (!longest || tokens > longest.tokens) longest = { index, tokens };
  }
  if (longest && longest.tokens > context) {
    const over = longest.tokens - context;
    throw new InvalidInputError(
      'experienceTokenBudget',
      `${where}[${longest.index}]'s prompt with a full library (${config.experienceTokenBudget} tokens of experiences), its template and chat markup, ` +
        `plus maxNewTokens ${config.maxNewTokens}, comes to ${longest.tokens} tokens, over the policy's context of ${context} tokens; ` +
        `lower experienceTokenBudget to ${Math.max(0, config.experienceTokenBudget - over)} or maxNewTokens by ${over}, or shorten the item.`,
    );
  }
}

async function promptTokens(prompt: PromptInput, count: (text: string) => Promise<number>): Promise<number> {
  if (prompt.prompt !== undefined) return (await count(prompt.prompt)) + MARKUP_TOKENS;
  const messages = prompt.messages ?? [];
  let tokens = MARKUP_TOKENS + MARKUP_TOKENS_PER_MESSAGE * messages.length;
  for (const message of messages) tokens += await count(message.content);
  return tokens;
}
