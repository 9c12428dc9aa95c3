/**
 * Ask/tell (the grpo_server package's idea, as a library): the task code asks for a group of completions,
 * scores them however it likes, and tells the rewards back; the session turns them into
 * group-relative advantages with `computeAdvantages` and keeps everything for the critic step,
 * for export, or for a later look. Any number of tasks may interleave asks and tells on one
 * policy: model calls wait in one FIFO queue, and every group keeps its own id and completions.
 */
import type { ResponseFormat, GenerateGroupOptions, Policy, PromptInput, SamplingOptions, TokenEvent, Usage } from '../core/policy.js';
import { InvalidInputError, NotFoundError } from '../errors.js';
import { computeAdvantages } from '../math/advantages.js';
import { MemorySessionStore } from '../store/memory/groups.js';
import { createKeyedLock, createTaskQueue, queuedPolicy, type QueueOptions, type TaskQueue } from './queue.js';
import {
  completionId,
  finiteOrNull,
  isTokenIds,
  policyCompletion,
  randomGroupId,
  requirePrompt,
  rewardRow,
  rewardTable,
  samplingOf,
} from './records.js';
import type {
  CompletionRecord,
  GroupAdvantageOptions,
  GroupMeta,
  GroupRecord,
  Reward,
  SessionStore,
} from '../store/records/session.js';

export interface SessionOptions {
  policy: Policy;
  /** Where groups are kept. Default: a `MemorySessionStore`. */
  store?: SessionStore;
  /** `computeAdvantages` options for every tell (weights, scaleRewards, aggregation, estimator). */
  advantages?: GroupAdvantageOptions;
  /** Sampling defaults merged under every ask. `maxNewTokens` defaults to 256. */
  defaults?: SamplingOptions & { maxNewTokens?: number };
  /**
   * The queue model calls wait in: one shared with other users of the same policy, or options for
   * a new one. Default: a new queue running one call at a time.
   */
  queue?: TaskQueue | QueueOptions;
  /** Group ids; default `grp-` and 16 random hex digits. Completion ids are `<groupId>-<index>`. */
  newId?: () => string;
  /** Clock for `createdAt` and feedback times (ms since the epoch). */
  now?: () => number;
}

export interface AskInput extends PromptInput, SamplingOptions {
  /** Completions in the group (the G of GRPO). */
  n: number;
  /** Id for the new group (default: a fresh one from `newId`); must not be in use. */
  groupId?: string;
  maxNewTokens?: number;
  /** Alternatives to report per token; needs a policy that reports them. */
  topLogprobs?: number;
  /** Constrain the completions to a format; needs a policy with `info.responseFormats`. */
  responseFormat?: ResponseFormat;
  meta?: GroupMeta;
  signal?: AbortSignal;
  onToken?: (event: TokenEvent) => void;
}

export interface AskResult {
  groupId: string;
  completions: CompletionRecord[];
  promptTokenIds: number[];
  usage: Usage;
}

/** A completion the model did not write, told with its reward. Give its text, its token ids, or both. */
export interface ExternalCompletion {
  text?: string;
  tokenIds?: number[];
  reward: Reward;
}

export interface TellInput extends PromptInput {
  /** The group to reward. Omit it (and give `prompt` or `messages`) to tell a group of external completions. */
  groupId?: string;
  /**
   * Rewards for the group's completions: one per completion in index order, or keyed by completion
   * id (the others keep what they were told before, or stay unrewarded). Telling again replaces.
   */
  rewards?: readonly Reward[] | Readonly<Record<string, Reward>>;
  /** Completions to add to the group; scored with the policy so their log-probs are known. */
  completions?: readonly ExternalCompletion[];
  /** Temperature to score a new group of external completions at. Default 1. */
  temperature?: number;
  meta?: GroupMeta;
  signal?: AbortSignal;
  /**
   * Runs with the told group after its advantages are computed and before it is stored; when it
   * throws, the tell fails and the stored group stays as it was (the server writes its feedback
   * log line here, so a failed write never leaves a group told but unlogged).
   */
  beforeStore?: (group: GroupRecord) => Promise<void>;
}

export interface TellResult {
  groupId: string;
  /** One per completion of the group, in index order. */
  advantages: number[];
  /** Combined reward per completion; null where unscorable or not rewarded. */
  rewards: (number | null)[];
  group: GroupRecord;
}

export interface Session {
  /** The policy, its model calls routed through the session's queue. */
  readonly policy: Policy;
  readonly queue: TaskQueue;
  ask(input: AskInput): Promise<AskResult>;
  tell(input: TellInput): Promise<TellResult>;
  /** The group with this id; a `NotFoundError` if the store has none. */
  group(id: string): Promise<GroupRecord>;
  /** Stored groups, oldest first; `told` filters on whether rewards came back. */
  groups(filter?: { told?: boolean }): Promise<GroupRecord[]>;
  flush(): Promise<void>;
}

const DEFAULT_MAX_NEW_TOKENS = 256;

/**
 * An ask/tell session on a policy: `ask()` samples a group of completions, `tell()` takes their
 * rewards back and returns group-relative advantages; groups are kept in `store` (in memory by
 * default) for the critic step or export.
 *
 * @example
 * ```ts
 * const session = createSession({ policy });
 * const { groupId, completions } = await session.ask({ prompt: 'What is 2 + 2?', n: 4 });
 * await session.tell({ groupId, rewards: completions.map((c) => (c.text.includes('4') ? 1 : 0)) });
 * ```
 */
export function createSession(options: SessionOptions): Session {
  const inner = options.policy;
  if (!inner || typeof inner.generateGroup !== 'function') {
    throw new InvalidInputError('policy', 'must implement the Policy interface (generateGroup).');
  }
  const queue = options.queue && 'run' in options.queue ? options.queue : createTaskQueue(options.queue);
  const parts: Parts = {
    inner,
    policy: queuedPolicy(inner, queue),
    store: options.store ?? new MemorySessionStore(),
    lock: createKeyedLock(),
    newId: options.newId ?? randomGroupId,
    now: options.now ?? Date.now,
    advantages: { ...options.advantages },
    defaults: options.defaults,
  };
  return {
    policy: parts.policy,
    queue,
    ask: (input) => ask(parts, input),
    tell: (input) => tell(parts, input),
    group: (id) => requireGroup(parts, id),
    async groups(filter = {}) {
      const all = await parts.store.list();
      if (filter.told === undefined) return all;
      return all.filter((g) => (g.feedback !== undefined) === filter.told);
    },
    async flush() {
      await parts.lock.idle();
      await parts.store.flush?.();
    },
  };
}

/** What a session's calls share: the policy (and its queued view), the store, the per-group lock, ids, clock and defaults. */
interface Parts {
  inner: Policy;
  /** `inner` with its model calls routed through the session's queue. */
  policy: Policy;
  store: SessionStore;
  lock: ReturnType<typeof createKeyedLock>;
  newId: () => string;
  now: () => number;
  advantages: GroupAdvantageOptions;
  defaults: SessionOptions['defaults'];
}

async function ask(parts: Parts, input: AskInput): Promise<AskResult> {
  const { inner, store } = parts;
  const prompt = requirePrompt(input);
  if (!Number.isInteger(input.n) || input.n < 1) {
    throw new InvalidInputError('n', `must be a positive integer (the group size), got ${String(input.n)}.`);
  }
  const sampling = samplingOf(parts.defaults, input);
  sampling.maxNewTokens ??= DEFAULT_MAX_NEW_TOKENS;
  const request: GenerateGroupOptions = {
    ...prompt,
    ...sampling,
    maxNewTokens: sampling.maxNewTokens,
    groupSize: input.n,
    ...(input.topLogprobs ? { topLogprobs: input.topLogprobs } : {}),
    ...(input.responseFormat ? { responseFormat: input.responseFormat } : {}),
    ...(input.signal ? { signal: input.signal } : {}),
    ...(input.onToken ? { onToken: input.onToken } : {}),
  };
  const id = input.groupId ?? parts.newId();
  if (typeof id !== 'string' || id === '') throw new InvalidInputError('groupId', 'must be a non-empty string.');
  if (await store.get(id)) throw new InvalidInputError('groupId', `"${id}" is already in use; leave it out to get a fresh one.`);
  const result = await parts.policy.generateGroup(request);
  const group: GroupRecord = {
    id,
    createdAt: parts.now(),
    ...prompt,
    promptTokenIds: result.promptTokenIds,
    model: inner.info.model,
    sampling,
    completions: result.completions.map((c, index) => policyCompletion(id, index, c)),
    ...(input.meta ? { meta: { ...input.meta } } : {}),
  };
  const promptText = await promptTextOf(inner, prompt, result.promptTokenIds);
  if (promptText !== undefined) group.promptText = promptText;
  await store.put(group);
  return {
    groupId: id,
    completions: structuredClone(group.completions),
    promptTokenIds: [...result.promptTokenIds],
    usage: { ...result.usage },
  };
}

/**
 * The text the model saw. For a chat that is the decoded prompt, kept only if it encodes back to
 * the very same ids: TRL re-tokenises a standard-format prompt, so anything less (a decoder that
 * drops the template's special tokens, say) would train on a different prompt.
 */
async function promptTextOf(inner: Policy, input: PromptInput, promptTokenIds: number[]): Promise<string | undefined> {
  if (input.prompt !== undefined) return input.prompt;
  if (!inner.decode || promptTokenIds.length === 0) return undefined;
  const text = await inner.decode(promptTokenIds, { skipSpecialTokens: false });
  if (inner.encode) {
    const again = await inner.encode(text);
    if (again.length !== promptTokenIds.length || again.some((id, i) => id !== promptTokenIds[i])) return undefined;
  }
  return text;
}

async function tell(parts: Parts, input: TellInput): Promise<TellResult> {
  if (input === null || typeof input !== 'object') throw new InvalidInputError('tell', 'takes an object { groupId, rewards }.');
  if (input.groupId !== undefined) {
    if (typeof input.groupId !== 'string') throw new InvalidInputError('groupId', 'must be a string.');
    const id = input.groupId;
    return parts.lock.run(id, async () => tellGroup(parts, await requireGroup(parts, id), input));
  }
  const prompt = requirePrompt(input);
  if (!input.completions?.length) {
    throw new InvalidInputError('completions', 'are needed to tell a new group; to reward an asked group give its groupId.');
  }
  if (input.temperature !== undefined && !(input.temperature >= 0)) {
    throw new InvalidInputError('temperature', `must be >= 0, got ${input.temperature}.`);
  }
  const { inner } = parts;
  const promptTokenIds = prompt.prompt !== undefined && inner.encode ? await inner.encode(prompt.prompt) : [];
  const group: GroupRecord = {
    id: parts.newId(),
    createdAt: parts.now(),
    ...prompt,
    ...(prompt.prompt !== undefined ? { promptText: prompt.prompt } : {}),
    promptTokenIds,
    model: inner.info.model,
    sampling: { temperature: input.temperature ?? 1 },
    completions: [],
    ...(input.meta ? { meta: { ...input.meta } } : {}),
  };
  return parts.lock.run(group.id, () => tellGroup(parts, group, { ...input, rewards: undefined }));
}

/** Validates every reward, computes the group's advantages, scores the told completions, and stores the group. */
async function tellGroup(parts: Parts, group: GroupRecord, input: TellInput): Promise<TellResult> {
  const told = toldRewards(group, input.rewards);
  const extra = input.completions ?? [];
  if (!Array.isArray(extra)) throw new InvalidInputError('completions', 'must be an array of { text, reward }.');
  const extraRows = extra.map((c, i) => rewardRow(c?.reward, `completions[${i}].reward`));
  if (told.size === 0 && extra.length === 0) {
    throw new InvalidInputError('rewards', `nothing to tell group ${group.id}: give rewards or completions.`);
  }
  const total = group.completions.length + extra.length;
  if (total < 2) {
    throw new InvalidInputError(
      'rewards',
      `group ${group.id} would have one completion; relative advantages need at least 2: ask with n >= 2 or tell more completions.`,
    );
  }
  // Validate every reward before the (slow) scoring of external completions.
  const rows = [...group.completions.map((c, i) => told.get(i) ?? c.rewards), ...extraRows];
  const table = rewardTable(rows);
  const result = computeAdvantages(table, { ...parts.advantages, groupSize: total });
  const added = extra.length ? await externalCompletions(parts, group, extra, input.signal) : [];
  const updated: GroupRecord = {
    ...group,
    completions: [...group.completions, ...added].map((c, i) => ({
      ...c,
      ...(rows[i] ? { rewards: rows[i] } : {}),
      reward: finiteOrNull(result.rewards[i]),
      advantage: result.advantages[i],
    })),
    feedback: {
      at: parts.now(),
      options: { ...parts.advantages },
      mean: finiteOrNull(result.groupMeans[0]),
      std: finiteOrNull(result.groupStds[0]),
    },
    ...(input.meta ? { meta: { ...group.meta, ...input.meta } } : {}),
  };
  await input.beforeStore?.(structuredClone(updated));
  await parts.store.put(updated);
  return {
    groupId: updated.id,
    advantages: [...result.advantages],
    rewards: updated.completions.map((c) => c.reward ?? null),
    group: structuredClone(updated),
  };
}

/** The told rewards by completion index: one per completion in order, or keyed by completion id. */
function toldRewards(group: GroupRecord, rewards: TellInput['rewards']): Map<number, (number | null)[]> {
  const told = new Map<number, (number | null)[]>();
  if (Array.isArray(rewards)) {
    const list = rewards as readonly Reward[];
    if (list.length !== group.completions.length) {
      throw new InvalidInputError(
        'rewards',
        `has ${list.length} values but group ${group.id} has ${group.completions.length} completions; give one per completion, in order, or key them by completion id.`,
      );
    }
    list.forEach((r, i) => told.set(i, rewardRow(r, `rewards[${i}]`)));
  } else if (rewards !== undefined) {
    if (rewards === null || typeof rewards !== 'object') {
      throw new InvalidInputError('rewards', 'must be an array (one per completion) or an object keyed by completion id.');
    }
    for (const [key, r] of Object.entries(rewards as Record<string, Reward>)) {
      const index = group.completions.findIndex((c) => c.id === key);
      if (index < 0) throw new InvalidInputError('rewards', `"${key}" is not a completion of group ${group.id}.`);
      told.set(index, rewardRow(r, `rewards["${key}"]`));
    }
  }
  return told;
}

/** Tokenises (or decodes) told completions and scores them under the group's prompt. */
async function externalCompletions(parts: Parts, group: GroupRecord, told: readonly ExternalCompletion[], signal?: AbortSignal): Promise<CompletionRecord[]> {
  const { policy } = parts;
  const rows = await Promise.all(told.map((c, i) => textAndTokens(parts.inner, c, `completions[${i}]`)));
  const scorable = rows.filter((r) => r.tokenIds.length > 0);
  let scored: number[][] = [];
  if (policy.scoreCompletions && scorable.length > 0) {
    // The group's sampling temperature, so told and sampled log-probs compare; a greedy group
    // (temperature 0) is scored under the unscaled distribution.
    const result = await policy.scoreCompletions({
      ...requirePrompt(group),
      completions: scorable.map((r) => r.tokenIds),
      temperature: group.sampling.temperature || 1,
      ...(signal ? { signal } : {}),
    });
    scored = result.logprobs;
  }
  return rows.map((r, i): CompletionRecord => {
    const index = group.completions.length + i;
    const logprobs = scored.length > 0 && r.tokenIds.length > 0 ? scored[scorable.indexOf(r)] : [];
    return { id: completionId(group.id, index), index, source: 'external', text: r.text, tokenIds: r.tokenIds, logprobs };
  });
}

async function textAndTokens(inner: Policy, c: ExternalCompletion, at: string): Promise<{ text: string; tokenIds: number[] }> {
  if (c === null || typeof c !== 'object') throw new InvalidInputError(at, 'must be an object { text, reward }.');
  if (c.text !== undefined && typeof c.text !== 'string') throw new InvalidInputError(`${at}.text`, 'must be a string.');
  if (c.tokenIds !== undefined) {
    if (!isTokenIds(c.tokenIds)) throw new InvalidInputError(`${at}.tokenIds`, 'must be an array of non-negative integer token ids.');
    const text = c.text ?? (inner.decode ? await inner.decode(c.tokenIds) : undefined);
    if (text === undefined) throw new InvalidInputError(`${at}.text`, 'is needed: this policy cannot decode token ids.');
    return { text, tokenIds: [...c.tokenIds] };
  }
  if (c.text === undefined) throw new InvalidInputError(at, 'give its text or its tokenIds.');
  return { text: c.text, tokenIds: inner.encode ? await inner.encode(c.text) : [] };
}

async function requireGroup(parts: Parts, id: string): Promise<GroupRecord> {
  const group = await parts.store.get(id);
  if (!group) {
    throw new NotFoundError(
      `No group "${id}" is stored: use the groupId that ask returned (over HTTP, the response id); old groups may have been evicted.`,
    );
  }
  return group;
}
