/**
 * `POST /v1/feedback` and `GET /v1/groups/:id`: the tell half of ask/tell over HTTP (as the grpo_server package offers it).
 * A response's `id` is its group id and `<id>-<index>` the id of choice `index`, so a client
 * holding an ordinary OpenAI response can reward it:
 *
 *   {"group_id": "chatcmpl-...", "rewards": [1, 0, 0.5, null]}      one per choice, in order
 *   {"rewards": {"chatcmpl-...-0": 1, "cmpl-...-2": 0}}              by completion id, any groups
 *   {"group_id": "...", "rewards": [...], "completions": [{"text": "...", "reward": 1}]}
 *   {"messages" | "prompt": ..., "completions": [{"text": "...", "reward": 1}, ...]}   a new group
 *
 * A reward is a number, null (could not score), or a list with one value per reward function.
 * Told completions are scored by the model, so a group holds at most as many as `n` may ask for,
 * however many requests tell them.
 */
import { parseCompletionId } from '../session/records.js';
import type { ExternalCompletion, Session, TellInput } from '../session/session.js';
import type { GroupRecord, Reward } from '../store/records/session.js';
import { ApiError, badField } from './api-error.js';
import { asBody, optionalNumber, optionalString, TEXT, typeName, type Body } from './fields.js';
import { parseMessages } from './requests.js';

/** Called on every group about to be told (a new one has no id yet); throws to refuse the request. */
export type FeedbackCheck = (group: Pick<GroupRecord, 'prompt' | 'messages' | 'promptText'> & { id?: string }) => void;

export interface FeedbackOptions {
  /** Most completions one request may tell (the model scores each). */
  maxCompletions: number;
  check?: FeedbackCheck;
  /** Runs on each told group before it is stored (see `TellInput.beforeStore`). */
  beforeStore?: (group: GroupRecord) => Promise<void>;
}

export async function feedback(session: Session, raw: unknown, options: FeedbackOptions): Promise<GroupRecord[]> {
  const check = options.check ?? (() => undefined);
  const body = asBody(raw);
  const groupId = optionalString(body, 'group_id');
  const rewards = body.rewards ?? undefined;
  const completions = parseCompletions(body.completions, options.maxCompletions);
  // The cap is checked again on the told group itself (inside the group's lock): two tells racing
  // to add completions each pass the early check below.
  const hook =
    completions || options.beforeStore
      ? {
          beforeStore: async (group: GroupRecord) => {
            if (completions && group.completions.length > options.maxCompletions) {
              throw tooManyCompletions(group.id, group.completions.length, options.maxCompletions);
            }
            await options.beforeStore?.(group);
          },
        }
      : {};
  const temperature = optionalNumber(body, 'temperature', { min: 0, max: 2 });
  const prompt = optionalString(body, 'prompt', TEXT);
  const messages = body.messages === undefined || body.messages === null ? undefined : parseMessages(body.messages);

  if (groupId !== undefined) {
    const group = await session.group(groupId);
    check(group);
    const total = group.completions.length + (completions?.length ?? 0);
    if (completions && total > options.maxCompletions) throw tooManyCompletions(groupId, total, options.maxCompletions);
    const told = await session.tell({ groupId, ...rewardsField(rewards), ...(completions ? { completions } : {}), ...hook });
    return [told.group];
  }
  if (prompt !== undefined || messages !== undefined) {
    if (rewards !== undefined) throw badField('rewards', 'belongs to an existing group: send group_id with it.');
    check({ ...(prompt !== undefined ? { prompt } : {}), ...(messages ? { messages } : {}) });
    const input: TellInput = {
      ...(prompt !== undefined ? { prompt } : {}),
      ...(messages ? { messages } : {}),
      completions: completions ?? [],
      ...(temperature !== undefined ? { temperature } : {}),
      ...hook,
    };
    return [(await session.tell(input)).group];
  }
  if (rewards === undefined || rewards === null || typeof rewards !== 'object' || Array.isArray(rewards)) {
    throw new ApiError(
      400,
      'Send group_id with rewards (a list, one per choice), rewards keyed by completion id, or a prompt/messages with completions.',
      { param: 'rewards', code: 'invalid_value' },
    );
  }
  if (completions) throw badField('completions', 'need a group_id, or a prompt/messages for a new group.');
  // Rewards keyed by completion id may span groups: check every id first, then tell group by group.
  const byGroup = new Map<string, Record<string, Reward>>();
  for (const [id, reward] of Object.entries(rewards as Record<string, Reward>)) {
    const parsed = parseCompletionId(id);
    if (!parsed) throw badField('rewards', `"${id}" is not a completion id (<group id>-<index>).`);
    const group = byGroup.get(parsed.groupId) ?? {};
    group[id] = reward;
    byGroup.set(parsed.groupId, group);
  }
  const groups = await Promise.all([...byGroup.keys()].map((id) => session.group(id)));
  for (const group of groups) {
    check(group);
    for (const id of Object.keys(byGroup.get(group.id)!)) {
      if (!group.completions.some((c) => c.id === id)) throw badField('rewards', `"${id}" is not a completion of group ${group.id}.`);
    }
  }
  const told: GroupRecord[] = [];
  for (const [id, groupRewards] of byGroup) told.push((await session.tell({ groupId: id, rewards: groupRewards, ...hook })).group);
  return told;
}

function tooManyCompletions(groupId: string, total: number, max: number): ApiError {
  return badField('completions', `would give group ${groupId} ${total} completions; a group holds at most ${max} (the server's largest n), however many requests tell them.`);
}

function rewardsField(rewards: unknown): Pick<TellInput, 'rewards'> {
  if (rewards === undefined) return {};
  if (rewards === null || typeof rewards !== 'object') {
    throw badField('rewards', `must be a list (one per choice) or an object keyed by completion id, got ${typeName(rewards)}.`, 'invalid_type');
  }
  return { rewards: rewards as TellInput['rewards'] };
}

function parseCompletions(value: unknown, max: number): ExternalCompletion[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw badField('completions', `must be a list of { text, reward }, got ${typeName(value)}.`, 'invalid_type');
  if (value.length > max) throw badField('completions', `takes at most ${max} completions per request (the server's largest n), got ${value.length}.`);
  return value.map((c: unknown, i) => {
    if (c === null || typeof c !== 'object' || Array.isArray(c)) {
      throw badField(`completions[${i}]`, `must be an object { text, reward }, got ${typeName(c)}.`, 'invalid_type');
    }
    const item = c as Body;
    if (!('reward' in item)) throw badField(`completions[${i}].reward`, 'is required (a number, null, or a list).', 'missing_required_parameter');
    const text = optionalString(item, 'text', TEXT);
    const tokenIds = item.token_ids ?? undefined;
    if (tokenIds !== undefined && !Array.isArray(tokenIds)) {
      throw badField(`completions[${i}].token_ids`, 'must be a list of token ids.', 'invalid_type');
    }
    return {
      ...(text !== undefined ? { text } : {}),
      ...(tokenIds !== undefined ? { tokenIds: tokenIds as number[] } : {}),
      reward: item.reward as Reward,
    };
  });
}

/** A group as the HTTP API shows it (snake_case, seconds), under the model name clients see. */
export function groupView(group: GroupRecord, model: string) {
  return {
    id: group.id,
    object: 'group',
    created: Math.floor(group.createdAt / 1000),
    model,
    ...(group.prompt !== undefined ? { prompt: group.prompt } : {}),
    ...(group.messages ? { messages: group.messages } : {}),
    prompt_token_ids: group.promptTokenIds,
    completions: group.completions.map((c) => ({
      id: c.id,
      index: c.index,
      source: c.source,
      text: c.text,
      finish_reason: c.finishReason ?? null,
      reward: c.reward ?? null,
      rewards: c.rewards ?? null,
      advantage: c.advantage ?? null,
      token_ids: c.tokenIds,
      logprobs: c.logprobs,
    })),
    feedback: group.feedback
      ? { told_at: Math.floor(group.feedback.at / 1000), mean: group.feedback.mean, std: group.feedback.std }
      : null,
  };
}
