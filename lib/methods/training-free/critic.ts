/**
 * Talking to the critic. Its replies are untrusted: a structured reply is parsed, on failure the
 * critic is asked once to repair it, and if that fails too the caller gets the problem back to
 * record as a warning. Nothing unparsed ever reaches the library.
 */
import { InvalidInputError, throwIfAborted } from '../../errors.js';
import { fillTemplate } from '../../experience/render.js';
import type { JsonSchema, ChatMessage, Policy } from '../../core/policy.js';
import type { CriticExchange, TrainingFreeConfig } from './record.js';
import type { Parsed } from './parse.js';
import { deriveSeed } from '../../run/random.js';
import { criticBudget, fitPrompt, type CriticPrompt } from './budget.js';

/** The settings the critic's work depends on (a run's config has them all). */
export type CriticConfig = Pick<
  TrainingFreeConfig,
  'templates' | 'criticTemperature' | 'criticMaxNewTokens' | 'seed' | 'givenGroundTruth' | 'lessonsPerGroup' | 'maxExperienceLength'
>;

export interface CriticContext {
  critic: Policy;
  config: CriticConfig;
  signal: AbortSignal;
}

/** Longest critic reply kept in a record (summaries are fed back into later prompts). */
export const MAX_CRITIC_REPLY = 4000;

/**
 * One critic reply to `messages` (greedy at the default critic temperature 0), at most
 * `criticMaxNewTokens` long and at most half the critic's context (budget.ts).
 */
export async function criticReply(ctx: CriticContext, messages: ChatMessage[], seedParts: Array<string | number>, schema?: JsonSchema): Promise<string> {
  const { config, critic, signal } = ctx;
  const group = await critic.generateGroup({
    ...(schema !== undefined && constrains(critic) ? { responseFormat: { type: 'json_schema' as const, schema } } : {}),
    messages,
    groupSize: 1,
    maxNewTokens: criticBudget(critic, config.criticMaxNewTokens).maxNewTokens,
    temperature: config.criticTemperature,
    seed: deriveSeed(config.seed, 'critic', ...seedParts),
    signal,
  });
  // A policy may return partial text on abort instead of throwing; never keep it.
  throwIfAborted(signal);
  const text = group.completions[0]?.text ?? '';
  return text.length > MAX_CRITIC_REPLY ? text.slice(0, MAX_CRITIC_REPLY) : text;
}

/** `prompt` filled and cut to fit the critic's context (budget.ts), followed by `suffix`. */
export function criticPrompt(ctx: CriticContext, prompt: CriticPrompt, suffix = ''): Promise<string> {
  return fitPrompt(prompt, ctx.config.templates.criticSystem, suffix, criticBudget(ctx.critic, ctx.config.criticMaxNewTokens));
}

export function criticMessages(config: CriticConfig, prompt: string): ChatMessage[] {
  return [
    { role: 'system', content: config.templates.criticSystem },
    { role: 'user', content: prompt },
  ];
}

export interface StructuredReply<T> {
  exchange: CriticExchange<T>;
  /** Why no usable value came back (both tries failed). */
  problem?: string;
  /** Parts of a usable reply that were dropped. */
  notes?: string[];
}

/**
 * A critic call the policy refused as malformed (typically a prompt longer than the model's
 * context): the reason, so the caller can skip this critic step with a warning instead of failing
 * the run. Anything else (network, abort) propagates.
 */
export function refusal(error: unknown): string | undefined {
  return error instanceof InvalidInputError ? `the critic model refused the request (${error.message.replace(/\.$/, '')})` : undefined;
}

/** Whether the critic policy decodes under a JSON Schema (then its answers parse every time). */
export function constrains(critic: Policy): boolean {
  return critic.info.responseFormats === true;
}

/** A schema-constrained answer: its shape for the prompt, and the schema for the decoder. */
export interface AnswerSchema {
  /** The bare JSON answer, as the prompt describes it (e.g. `{"lessons": ["..."]}`). */
  shape: string;
  schema: JsonSchema;
}

/**
 * Asks, parses, and on failure asks once more with a repair prompt. With `answer` and a critic
 * that `constrains`, the prompt asks for the bare JSON object and decoding follows the schema.
 * The prompt is cut to fit the critic's context; the request for the answer's format never is.
 */
export async function askStructured<T>(
  ctx: CriticContext,
  prompt: CriticPrompt,
  seedParts: Array<string | number>,
  parse: (text: string) => Parsed<T>,
  format: string,
  answer?: AnswerSchema,
): Promise<StructuredReply<T>> {
  const constrained = answer !== undefined && constrains(ctx.critic) ? answer : undefined;
  const asked = await criticPrompt(ctx, prompt, constrained ? `\n\nAnswer with only this JSON object, no tags and no other text: ${constrained.shape}` : '');
  try {
    return await exchange(ctx, asked, seedParts, parse, constrained ? `only the JSON object ${constrained.shape}` : format, constrained?.schema);
  } catch (error) {
    const problem = refusal(error);
    if (problem === undefined) throw error;
    return { exchange: { outputs: [] }, problem: `${problem}.` };
  }
}

async function exchange<T>(
  ctx: CriticContext,
  prompt: string,
  seedParts: Array<string | number>,
  parse: (text: string) => Parsed<T>,
  format: string,
  schema: JsonSchema | undefined,
): Promise<StructuredReply<T>> {
  const messages = criticMessages(ctx.config, prompt);
  const first = await criticReply(ctx, messages, seedParts, schema);
  const parsed = parse(first);
  if (parsed.ok) return { exchange: { outputs: [first], parsed: parsed.value }, notes: parsed.notes };

  const repair = fillTemplate(ctx.config.templates.repair, { problem: parsed.problem, format });
  // The first reply is shown back as far as the context allows (the prompt and the repair request already take their share).
  const shown = await fitPrompt(
    { template: '{{reply}}', fields: { reply: first }, cut: ['reply'] },
    `${ctx.config.templates.criticSystem}\n${prompt}\n${repair}`,
    '',
    criticBudget(ctx.critic, ctx.config.criticMaxNewTokens, 4),
  );
  const second = await criticReply(ctx, [...messages, { role: 'assistant', content: shown }, { role: 'user', content: repair }], [...seedParts, 'repair'], schema);
  const retried = parse(second);
  if (retried.ok) return { exchange: { outputs: [first, second], parsed: retried.value }, notes: retried.notes };
  return { exchange: { outputs: [first, second] }, problem: `${parsed.problem} After a repair request: ${retried.problem}` };
}
