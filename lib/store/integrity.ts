/**
 * Integrity rules for what the persistent stores read back (files, IndexedDB records): a stored
 * run is whole or the read fails with a `StoreCorruptError` naming the file or record. A run has
 * its record, its dataset (all `itemCount` items), steps numbered 1..N without a gap, and pending
 * item results only for step N + 1; each record has the shape the loops rely on. A run cannot be
 * marked completed before its schedule's last step is stored. The checks are structural and cheap
 * (no per-token scan), so they run on every read a resume makes; imports go through the full
 * `validateBundle` instead.
 *
 * `what` names the record as its store lays it out (the file's path, or the IndexedDB record), for
 * the operator who restores or deletes it; the server shows its clients a neutral message instead.
 */
import { InvalidInputError, StoreCorruptError } from '../errors.js';
import { validateLibrary } from '../experience/normalize.js';
import type { ExperienceLibrary } from '../experience/types.js';
import type { ItemResult, RunRecord, StepRecord } from './records.js';
import type { DatasetItem } from '../core/dataset.js';
import { recordKind } from './validate.js';
import { validateDatasetItem } from '../core/dataset.js';

type Obj = Record<string, unknown>;

/** What to do about a damaged run, ending every message. */
export function remedy(runId: string): string {
  return `restore it from a backup or an export of run "${runId}", or delete the run and start it again`;
}

function corrupt(what: string, problem: string, runId: string): never {
  throw new StoreCorruptError(what, `${what} ${problem}; ${remedy(runId)}.`);
}

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown, min = 0): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min;
}

const STATUSES = ['running', 'aborted', 'failed', 'completed'];

/** A run record as stored (`run.json`, the `runs` row): the fields every loop reads before anything else. */
export function checkRun(value: unknown, runId: string, what: string): RunRecord {
  if (!isObj(value)) corrupt(what, 'is not a run record (expected a JSON object)', runId);
  if (value.id !== runId) corrupt(what, `names run ${JSON.stringify(value.id)}, not "${runId}"`, runId);
  if (typeof value.kind !== 'string') corrupt(what, 'has no kind', runId);
  if (!STATUSES.includes(value.status as string)) corrupt(what, `has the unknown status ${JSON.stringify(value.status)}`, runId);
  if (!isObj(value.config)) corrupt(what, 'has no config', runId);
  // The schedule every loop walks: a zero or fractional count would never end or skip items.
  for (const key of ['epochs', 'batchSize', 'groupSize'] as const) {
    if (!isCount(value.config[key], 1)) corrupt(what, `has an invalid config.${key} (${JSON.stringify(value.config[key])}; a positive integer)`, runId);
  }
  if (!isCount(value.itemCount, 1)) corrupt(what, 'has no item count', runId);
  // Read as validated: a library stored before exemplars existed gets its empty list.
  return { ...value, initialLibrary: checkLibrary(value.initialLibrary, `${what} (initialLibrary)`, runId) } as unknown as RunRecord;
}

/** A run's dataset: exactly `itemCount` items, each a prompt or chat messages. `undefined` is a missing dataset. */
export function checkItems(value: unknown, run: RunRecord, what: string): DatasetItem[] {
  if (value === undefined) corrupt(what, 'is missing', run.id);
  if (!Array.isArray(value)) corrupt(what, 'is not a list of dataset items', run.id);
  if (value.length !== run.itemCount) corrupt(what, `has ${value.length} items but the run has ${run.itemCount}`, run.id);
  return value.map((item, i) => {
    try {
      return validateDatasetItem(item, `items[${i}]`);
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      return corrupt(what, `item ${i} is not a dataset item (${error.message.replace(/\.$/, '')})`, run.id);
    }
  });
}

/**
 * A committed step: its number is the one it is stored under; its items are there, and its payload
 * has the shape its method (`RecordKind.read`, looked up by the payload's kind) relies on.
 */
export function checkStep(value: unknown, step: number, runId: string, what: string): StepRecord {
  if (!isObj(value)) corrupt(what, 'is not a step record (expected a JSON object)', runId);
  if (value.step !== step) corrupt(what, `holds step ${JSON.stringify(value.step)}, not step ${step}`, runId);
  if (!isCount(value.epoch, 1) || !isCount(value.batch, 1)) corrupt(what, 'has no epoch or batch number', runId);
  if (!Array.isArray(value.items)) corrupt(what, 'has no items', runId);
  value.items.forEach((item, i) => checkResultShape(item, `${what} (items[${i}])`, runId, step));
  if (!Array.isArray(value.warnings)) corrupt(what, 'has no warnings list', runId);
  if (!isObj(value.stats)) corrupt(what, 'has no stats', runId);
  if (typeof value.committedAt !== 'string') corrupt(what, 'has no commit time', runId);
  const payload = value.payload;
  if (!isObj(payload) || typeof payload.kind !== 'string') corrupt(what, 'has no method payload', runId);
  const read = recordKind(payload.kind)?.read;
  if (!read) return value as unknown as StepRecord;
  try {
    return { ...value, payload: read(payload, 'payload') } as unknown as StepRecord;
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    return corrupt(what, `(payload) is not a ${payload.kind} step payload (${error.message.replace(/\.$/, '')})`, runId);
  }
}

/** Step numbers as found (any order): 1..N without a gap or a repeat. Returns N. */
export function checkStepNumbers(numbers: readonly number[], runId: string, what: string): number {
  const sorted = [...numbers].sort((a, b) => a - b);
  sorted.forEach((n, i) => {
    if (n !== i + 1) corrupt(what, n > i + 1 ? `lack step ${i + 1} (step ${n} follows step ${i})` : `hold step ${n} twice`, runId);
  });
  return sorted.length;
}

/** A finished item of the step in progress: of step `last + 1`, at a batch position, for a dataset index. */
export function checkPending(value: unknown, last: number, run: RunRecord, what: string): ItemResult {
  const result = checkResultShape(value, what, run.id);
  if (result.step !== last + 1) {
    corrupt(what, `is an item of step ${result.step}, but the last committed step is ${last}; only step ${last + 1} can be in progress`, run.id);
  }
  if (result.index >= run.itemCount) corrupt(what, `names dataset item ${result.index} of ${run.itemCount}`, run.id);
  return result;
}

/** A run may be marked completed only once every step of its schedule is stored. */
export function checkCompleted(run: RunRecord, steps: number, what: string): void {
  const expected = scheduledSteps(run);
  if (expected !== undefined && steps < expected) {
    corrupt(what, `holds ${steps} of the run's ${expected} steps, so the run cannot be completed`, run.id);
  }
}

/** Steps of a run's schedule: every item once per epoch, in batches (see `Schedule`). */
function scheduledSteps(run: RunRecord): number | undefined {
  const { epochs, batchSize } = run.config as { epochs?: unknown; batchSize?: unknown };
  if (!isCount(epochs, 1) || !isCount(batchSize, 1)) return undefined;
  return epochs * Math.ceil(run.itemCount / batchSize);
}

function checkResultShape(value: unknown, what: string, runId: string, step?: number): ItemResult {
  if (!isObj(value)) corrupt(what, 'is not an item result (expected a JSON object)', runId);
  if (!isCount(value.step, 1) || (step !== undefined && value.step !== step)) corrupt(what, `has the wrong step ${JSON.stringify(value.step)}`, runId);
  if (!isCount(value.index) || !isCount(value.position)) corrupt(what, 'has no dataset index or batch position', runId);
  if (!Array.isArray(value.rollouts)) corrupt(what, 'has no rollouts', runId);
  value.rollouts.forEach((rollout, i) => {
    if (!isRolloutShape(rollout)) corrupt(what, `rollout ${i} lacks its text, tokens, log-probs, rewards or advantage`, runId);
  });
  if (!isObj(value.prompt)) corrupt(what, 'has no prompt', runId);
  if (!Array.isArray(value.experienceIds) || !Array.isArray(value.warnings)) corrupt(what, 'has no experience ids or warnings', runId);
  if (!isObj(value.stats) || typeof value.stats.spread !== 'number' || !isCount(value.stats.scorable)) corrupt(what, 'has no group stats', runId);
  return value as unknown as ItemResult;
}

/** The fields of a rollout that stats, exports and critics read (per-token values are not scanned). */
function isRolloutShape(value: unknown): boolean {
  if (!isObj(value)) return false;
  const { text, tokenIds, logprobs, rewards, reward, advantage } = value;
  return (
    typeof text === 'string' &&
    Array.isArray(tokenIds) &&
    Array.isArray(logprobs) &&
    Array.isArray(rewards) &&
    (reward === null || typeof reward === 'number') &&
    typeof advantage === 'number'
  );
}

function checkLibrary(value: unknown, what: string, runId: string): ExperienceLibrary {
  try {
    return validateLibrary(value, 'library');
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    corrupt(what, `is not an experience library (${error.message.replace(/\.$/, '')})`, runId);
  }
}
