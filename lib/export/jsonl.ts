/**
 * JSONL for trainers elsewhere (TRL, verl): one line per completion in TRL's prompt-completion
 * types, either format:
 *
 *   standard        {"prompt": "The sky is", "completion": " blue."}
 *   conversational  {"prompt": [{"role": "user", "content": "..."}], "completion": [{"role": "assistant", "content": "..."}]}
 *
 * Optional extra columns (reward, advantage, group_id, completion_id, logprobs, token_ids, and
 * arm: the router's variant that wrote the completion, left out where no completion has one) are
 * named so TRL keeps them apart from its own keys: `datasets` loads them as ordinary columns and
 * GRPOTrainer hands extra columns to reward functions as keyword arguments. Every line has the
 * same keys with the same JSON types, as `datasets`' JSON loader (pyarrow) requires, and so does
 * every file: rewards, advantages and log-probs are written as floats even when whole (`0.0`, not
 * `0`, which pyarrow would read as int64 in one file and double in the next, and `datasets` then
 * refuses to concatenate them). The standard format needs each chat prompt as the model reads it
 * (`renderPrompts` puts it through the model's chat template).
 */
import { InvalidInputError } from '../errors.js';
import type { ChatMessage } from '../core/policy.js';
import type { ExportCompletion, ExportGroup } from '../run/groups.js';
import type { RunBundle } from '../store/records/index.js';
import { isRunBundle, runGroups } from './run.js';

/**
 * Groups, anything that carries them, or a stored training run (`exportRun`, `store.readBundle`):
 * a run's groups are its item results, see `runGroups`.
 */
export type ExportSource = Iterable<ExportGroup> | { readonly groups: Iterable<ExportGroup> } | RunBundle;

export type JsonlFormat = 'standard' | 'conversational';

export type JsonlColumn = 'reward' | 'advantage' | 'groupId' | 'completionId' | 'logprobs' | 'tokenIds' | 'arm';

export interface ToJsonlOptions {
  /** TRL's `standard` (plain strings, the default) or `conversational` (role/content lists). */
  format?: JsonlFormat;
  /** Extra columns to add to every line. */
  include?: readonly JsonlColumn[];
  /** Skip completions that were never rewarded. Default false. */
  rewardedOnly?: boolean;
}

export const COLUMN_NAMES: Record<JsonlColumn, string> = {
  reward: 'reward',
  advantage: 'advantage',
  groupId: 'group_id',
  completionId: 'completion_id',
  logprobs: 'logprobs',
  tokenIds: 'token_ids',
  arm: 'arm',
};

/** Columns whose numbers are floats: written with a decimal point even when whole. */
const FLOAT_COLUMNS: ReadonlySet<string> = new Set([COLUMN_NAMES.reward, COLUMN_NAMES.advantage, COLUMN_NAMES.logprobs]);

/** The lines of `toJsonl`, one at a time and without their newline, for streaming large runs to a file. */
export function* jsonlLines(source: ExportSource, options: ToJsonlOptions = {}): Generator<string> {
  const format = options.format ?? 'standard';
  if (format !== 'standard' && format !== 'conversational') {
    throw new InvalidInputError('format', `must be 'standard' or 'conversational', got ${String(format)}.`);
  }
  const include = options.include ?? [];
  for (const column of include) {
    if (!(column in COLUMN_NAMES)) {
      throw new InvalidInputError('include', `unknown column "${column}"; choose from ${Object.keys(COLUMN_NAMES).join(', ')}.`);
    }
  }
  // Only router completions have an arm: the column is written where they do, never as nulls.
  let withArm: boolean | undefined;
  for (const group of groupsOf(source)) {
    const prompt = format === 'standard' ? standardPrompt(group) : conversationalPrompt(group);
    for (const completion of group.completions) {
      if (options.rewardedOnly && completion.reward === undefined) continue;
      const line: Record<string, unknown> = {
        prompt,
        completion: format === 'standard' ? completion.text : [{ role: 'assistant', content: completion.text }],
      };
      for (const column of include) {
        if (column === 'arm') {
          const has = completion.arm !== undefined;
          if (withArm !== undefined && has !== withArm) {
            throw new InvalidInputError('include', `completion ${completion.id ?? group.id} ${has ? 'has' : 'has no'} arm where earlier ones ${withArm ? 'had' : 'had none'}; export router runs apart from others.`);
          }
          withArm = has;
          if (!has) continue;
        }
        line[COLUMN_NAMES[column]] = columnValue(column, group, completion);
      }
      yield escapeLineSeparators(jsonLine(line));
    }
  }
}

/** One object as JSON, its float columns' whole numbers with a decimal point (`1.0`). */
function jsonLine(line: Record<string, unknown>): string {
  const fields = Object.entries(line).map(([key, value]) => `${JSON.stringify(key)}:${FLOAT_COLUMNS.has(key) ? floatJson(value) : JSON.stringify(value)}`);
  return `{${fields.join(',')}}`;
}

/** A number, null, or a list of them, as JSON whose numbers all read as floats. */
function floatJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(floatJson).join(',')}]`;
  const json = JSON.stringify(value);
  // JSON.stringify writes whole numbers as bare digits (and large ones with an exponent, already a float).
  return typeof value === 'number' && /^-?\d+$/.test(json) ? `${json}.0` : json;
}

/** Every completion as one JSON line, each ending in a newline; `JSON.parse` reads every line back. */
export function toJsonl(source: ExportSource, options: ToJsonlOptions = {}): string {
  let out = '';
  for (const line of jsonlLines(source, options)) out += line + '\n';
  return out;
}

export function groupsOf(source: ExportSource): Iterable<ExportGroup> {
  if (source !== null && typeof source === 'object') {
    if (Symbol.iterator in source) return source;
    if (isRunBundle(source)) return runGroups(source);
    if ('groups' in source && source.groups !== null && typeof source.groups === 'object' && Symbol.iterator in source.groups) {
      return source.groups;
    }
  }
  throw new InvalidInputError('source', 'must be an array of groups, an object with a `groups` array, or a stored run.');
}

export function standardPrompt(group: ExportGroup): string {
  const text = group.prompt ?? group.promptText;
  if (typeof text !== 'string') {
    throw new InvalidInputError(
      'format',
      `group ${group.id} is a chat, and the standard format needs it as the model reads it: pass the groups through renderPrompts(groups, policy) with the run's model (its chat template), or export with format 'conversational'.`,
    );
  }
  return text;
}

/** A raw-text prompt becomes one user message; chat prompts are kept as they are. */
export function conversationalPrompt(group: ExportGroup): ChatMessage[] {
  if (group.messages) return group.messages.map((m) => ({ role: m.role, content: m.content }));
  if (typeof group.prompt === 'string') return [{ role: 'user', content: group.prompt }];
  throw new InvalidInputError('source', `group ${group.id} has neither prompt nor messages.`);
}

function columnValue(column: JsonlColumn, group: ExportGroup, c: ExportCompletion): unknown {
  switch (column) {
    case 'reward':
      return c.reward ?? null;
    case 'advantage':
      return c.advantage ?? null;
    case 'groupId':
      return group.id;
    case 'completionId':
      return c.id ?? null;
    case 'logprobs':
      return c.logprobs ? [...c.logprobs] : [];
    case 'tokenIds':
      return c.tokenIds ? [...c.tokenIds] : [];
    case 'arm':
      return c.arm;
  }
}

/**
 * JSON allows U+2028 and U+2029 raw inside strings, but Python's `str.splitlines` and some JSONL
 * readers treat them as line breaks; escaped, every record stays on its one line for every reader.
 */
export function escapeLineSeparators(json: string): string {
  return json.replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}
