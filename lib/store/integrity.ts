/**
 * Integrity rules for what the persistent stores read back (files, IndexedDB records): a stored
 * run is whole or the read fails with a `StoreCorruptError` naming the file or record, and the
 * field where one is to blame. A run has its record, its dataset (all `itemCount` items), steps
 * numbered 1..N without a gap, and pending item results only for step N + 1; each record has the
 * shape the loops rely on. Config, schedule and progress agree: the steps are no more than the
 * schedule of `config.epochs` and `config.batchSize` over `itemCount` holds (all of them once the
 * run is completed), each step is the epoch, batch and number of items that schedule gives its
 * number, a pending item sits at a position of the next step's batch, and the adapter checkpoint
 * is the last step's and decodes. Every record the stores write also carries checksums of its
 * fields (checksum.ts: the run record with its config, each dataset item, step, pending item and
 * adapter checkpoint with its tensors), checked here; a record without them is damage
 * (`requireSeal`). A run cannot be marked completed before its schedule's last step is stored.
 * The method's parts (its run fields, step payload and checkpoint) are read by the run kind's
 * `RecordKind`, from the records the store was opened with; a kind none of them knows is read
 * with the common checks alone.
 * The checks are cheap (no per-token scan), so they run on every read a resume makes; imports go
 * through the full `validateBundle` instead.
 *
 * `what` names the record as its store lays it out (the file's path, or the IndexedDB record), for
 * the operator who restores or deletes it; the server shows its clients a neutral message instead.
 */
import { InvalidInputError, StoreCorruptError } from '../errors.js';
import { changedField, INTEGRITY, unsealed, type FieldChange } from './checksum.js';
import type { GroupRecord } from './records/session.js';
import type { ItemResult, RunRecord, StepRecord, StoredCheckpoint } from './records/index.js';
import { validateDatasetItem, type DatasetItem } from '../core/dataset.js';
import type { RecordLookup } from './records/kind.js';

type Obj = Record<string, unknown>;

/** What to do about a damaged run, ending every message. */
export function remedy(runId: string): string {
  return `restore it from a backup or an export of run "${runId}", or delete the run and start it again`;
}

function corrupt(what: string, problem: string, runId: string, field?: string): never {
  throw new StoreCorruptError(what, `${what} ${problem}; ${remedy(runId)}.`, field === undefined ? undefined : { field });
}

/** A stored record without its checksums, which must agree with it where it has them (`prefix`: the record's place in its file). */
function verified(value: unknown, what: string, runId: string, prefix = ''): unknown {
  const { record, integrity } = unsealed(value);
  if (integrity === undefined) return record;
  const found = changedField(record, integrity);
  if (found) {
    const field = `${prefix}${found.field}`;
    corrupt(what, `has ${changeText(field, found.change)} when it was written (its checksum says so: was it edited by hand?)`, runId, field);
  }
  return record;
}

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown, min = 0): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min;
}

const STATUSES = ['running', 'aborted', 'failed', 'completed'];

/** A run record as stored (`run.json`, the `runs` row): the fields every loop reads before anything else. */
export function checkRun(value: unknown, runId: string, what: string, records: RecordLookup): RunRecord {
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
  const fields = readRunFields(value, records, what, runId);
  const run = verified(value, what, runId) as Obj;
  return { ...run, ...fields } as unknown as RunRecord;
}

/** The method's fields of a run record as its kind reads them (normalised: an older stored shape in today's). */
function readRunFields(run: Obj, records: RecordLookup, what: string, runId: string): Obj {
  const fields: Obj = {};
  for (const [field, { description, read }] of Object.entries(records.get(run.kind as string)?.runFields ?? {})) {
    try {
      fields[field] = read(run[field], field);
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      corrupt(`${what} (${field})`, `is not ${description} (${error.message.replace(/\.$/, '')})`, runId);
    }
  }
  return fields;
}

/** A run's dataset: exactly `itemCount` items, each a prompt or chat messages. `undefined` is a missing dataset. */
export function checkItems(value: unknown, run: RunRecord, what: string): DatasetItem[] {
  if (value === undefined) corrupt(what, 'is missing', run.id);
  if (!Array.isArray(value)) corrupt(what, 'is not a list of dataset items', run.id);
  if (value.length !== run.itemCount) corrupt(what, `has ${value.length} items but the run has ${run.itemCount}`, run.id);
  return value.map((stored, i) => {
    const item = verified(stored, what, run.id, `[${i}].`);
    try {
      return validateDatasetItem(item, `items[${i}]`);
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      return corrupt(what, `item ${i} is not a dataset item (${error.message.replace(/\.$/, '')})`, run.id);
    }
  });
}

/**
 * A committed step: its number is the one it is stored under; its items are there, it is the
 * epoch and batch the run's schedule gives that number, and its payload has the shape its method
 * (`RecordKind.read`, looked up by the payload's kind) relies on.
 */
export function checkStep(stored: unknown, step: number, run: RunRecord, what: string, records: RecordLookup): StepRecord {
  const runId = run.id;
  const value = unsealed(stored).record;
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
  const record = { ...value, payload: readPayload(payload, records, what, runId) } as unknown as StepRecord;
  verified(stored, what, runId);
  checkScheduled(value, step, run, what);
  return record;
}

/** A step's payload as its method (`RecordKind.read`, looked up by the payload's kind) reads it back. */
function readPayload(payload: Obj, records: RecordLookup, what: string, runId: string): Obj {
  const kind = payload.kind as string;
  const read = records.get(kind)?.read;
  if (!read) return payload;
  try {
    return read(payload, 'payload');
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    return corrupt(what, `(payload) is not a ${kind} step payload (${error.message.replace(/\.$/, '')})`, runId);
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

/** A finished item of the step in progress: of step `last + 1`, at a position of its batch, for a dataset index. */
export function checkPending(stored: unknown, last: number, run: RunRecord, what: string): ItemResult {
  const result = checkResultShape(unsealed(stored).record, what, run.id);
  if (result.step !== last + 1) {
    corrupt(what, `is an item of step ${result.step}, but the last committed step is ${last}; only step ${last + 1} can be in progress`, run.id);
  }
  if (result.index >= run.itemCount) corrupt(what, `names dataset item ${result.index} of ${run.itemCount}`, run.id);
  const { size } = planOf(run, result.step);
  if (result.position >= size) corrupt(what, `sits at position ${result.position} of step ${result.step}, whose batch has ${size} items (${scheduleText(run)})`, run.id, 'position');
  verified(stored, what, run.id);
  return result;
}

/**
 * The steps a run holds agree with its schedule: no more than it has, and every one of them once
 * the run is completed (a run whose `config.epochs` or `config.batchSize` was edited down would
 * otherwise read as finished, or count past its end).
 */
export function checkProgress(run: RunRecord, steps: number, what: string): void {
  const { totalSteps } = scheduleOf(run);
  if (steps > totalSteps) corrupt(what, `hold ${steps} steps, but the run's schedule has ${totalSteps} (${scheduleText(run)})`, run.id, 'config.epochs');
  if (run.status === 'completed' && steps < totalSteps) corrupt(what, `hold ${steps} of the ${totalSteps} steps of a run marked completed (${scheduleText(run)})`, run.id, 'status');
}

/**
 * The adapter checkpoint of a run that keeps one: of the last committed step, in the shape its
 * method (`RecordKind.adapter`) decodes, tensors included, and as it was written.
 */
export function checkAdapter(stored: unknown, run: RunRecord, last: number, what: string, records: RecordLookup): StoredCheckpoint {
  const value = unsealed(stored).record;
  const kind = records.get(run.kind);
  if (kind?.adapter) {
    try {
      const step = kind.adapter(value, 'checkpoint');
      if (step !== last) corrupt(what, `is the checkpoint of step ${step}, but the last committed step is ${last}`, run.id, 'step');
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      corrupt(what, `is not a ${run.kind} checkpoint (${error.message.replace(/\.$/, '')})`, run.id, error.argument.replace(/^checkpoint\.?/, '') || undefined);
    }
  }
  verified(stored, what, run.id);
  return value as StoredCheckpoint;
}

/** A run may be marked completed only once every step of its schedule is stored. */
export function checkCompleted(run: RunRecord, steps: number, what: string): void {
  const expected = scheduleOf(run).totalSteps;
  if (steps < expected) corrupt(what, `holds ${steps} of the run's ${expected} steps, so the run cannot be completed`, run.id);
}

/**
 * The run's schedule as `Schedule` (lib/run/schedule.ts) lays it out, from a record `checkRun`
 * passed: every item once per epoch, in batches of `batchSize`, the last of an epoch smaller.
 */
function scheduleOf(run: RunRecord): { stepsPerEpoch: number; totalSteps: number } {
  const stepsPerEpoch = Math.ceil(run.itemCount / run.config.batchSize);
  return { stepsPerEpoch, totalSteps: stepsPerEpoch * run.config.epochs };
}

/** Step `step`'s place in the schedule: its epoch, its batch in the epoch, and the batch's size. */
function planOf(run: RunRecord, step: number): { epoch: number; batch: number; size: number } {
  const { stepsPerEpoch } = scheduleOf(run);
  const batch = ((step - 1) % stepsPerEpoch) + 1;
  const size = Math.min(run.config.batchSize, run.itemCount - (batch - 1) * run.config.batchSize);
  return { epoch: Math.floor((step - 1) / stepsPerEpoch) + 1, batch, size };
}

function scheduleText(run: RunRecord): string {
  return `config.epochs ${run.config.epochs} over ${run.itemCount} items in batches of config.batchSize ${run.config.batchSize}`;
}

/** A step record is the epoch and batch its number has in the schedule, with that batch's items at their positions. */
function checkScheduled(value: Obj, step: number, run: RunRecord, what: string): void {
  const plan = planOf(run, step);
  if (value.epoch !== plan.epoch || value.batch !== plan.batch) {
    corrupt(what, `is epoch ${String(value.epoch)} batch ${String(value.batch)}, but the run's schedule makes step ${step} epoch ${plan.epoch} batch ${plan.batch} (${scheduleText(run)})`, run.id, 'config.batchSize');
  }
  const items = value.items as Obj[];
  if (items.length !== plan.size) corrupt(what, `holds ${items.length} items, but batch ${plan.batch} of the run's schedule has ${plan.size} (${scheduleText(run)})`, run.id, 'config.batchSize');
  const seen = new Set<unknown>();
  items.forEach((item, i) => {
    if (item.position !== i || (item.index as number) >= run.itemCount || seen.has(item.index)) {
      corrupt(what, `(items[${i}]) is not the item at position ${i} of a batch of distinct dataset items among ${run.itemCount}`, run.id, `items[${i}].index`);
    }
    seen.add(item.index);
  });
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

/**
 * A stored ask/tell group (`groups/<id>.json`, a `groups` row): the group asked for (a file copied
 * over another group's is not it), its checksums present and agreeing (a group without them cannot
 * be verified and is not served), and the fields a tell and an export read. `what` names the file
 * or record, `remedy` (what to do about it) ends the message.
 */
export function checkGroup(stored: unknown, id: string, what: string, remedy: string): GroupRecord {
  const damaged = (problem: string, field?: string): never => {
    throw new StoreCorruptError(what, `${what} ${problem}; ${remedy}.`, field === undefined ? undefined : { field });
  };
  if (!isObj(stored)) damaged('is not a group record (expected a JSON object)');
  const { record, integrity } = unsealed(stored);
  if (integrity === undefined) {
    damaged('has no checksum (its `integrity` key was removed, or an early version wrote it), so nothing in it can be verified', INTEGRITY);
  }
  const found = changedField(record, integrity);
  if (found) damaged(`has ${changeText(found.field, found.change)} when it was written (its checksum says so: was it edited by hand?)`, found.field);
  const group = record as Obj;
  if (group.id !== id) damaged(`holds group ${JSON.stringify(group.id)?.slice(0, 80)}, not "${id}" (was another group's file copied over it?)`, 'id');
  if (!Array.isArray(group.completions) || !Array.isArray(group.promptTokenIds) || typeof group.createdAt !== 'number' || !isObj(group.sampling)) {
    damaged('lacks its completions, prompt tokens, creation time or sampling settings');
  }
  (group.completions as unknown[]).forEach((c, i) => {
    if (!isObj(c) || typeof c.text !== 'string' || !Array.isArray(c.tokenIds) || !Array.isArray(c.logprobs) || c.index !== i) damaged(`has a malformed completion ${i}`, `completions[${i}]`);
  });
  return group as unknown as GroupRecord;
}

function changeText(field: string, change: FieldChange['change']): string {
  return { changed: `a different ${field} than`, removed: `lost ${field} since`, added: `gained ${field} since` }[change];
}

/**
 * A stored record carries its checksums: one that lacks them (its `integrity` key deleted, which
 * would hide any edit, or a record an early webgrpo wrote) cannot be verified and is damage, not
 * trusted. Stores written before checksums are sealed once, on their owner's word (`sealWith`
 * names how, in the store at hand: file/seal.ts, idb/seal.ts). `stored` is one record, or a list of
 * them (items.json, a run's dataset rows); `check` reads it first, so a record broken in its shape
 * is named by what is broken.
 */
export function requireSeal<T>(stored: unknown, what: string, runId: string, sealWith: string, check: () => T): T {
  const checked = check();
  const list = Array.isArray(stored);
  (list ? (stored as unknown[]) : [stored]).forEach((record, i) => {
    if (!isObj(record) || INTEGRITY in record) return;
    const field = list ? `[${i}].${INTEGRITY}` : INTEGRITY;
    corrupt(
      what,
      `has no checksum (${field} is missing: the key was removed, or webgrpo before checksums wrote it), so no edit of it could be found; if webgrpo wrote this store before checksums and you trust it as it is, seal it once with ${sealWith}, otherwise ${remedy(runId)}`,
      runId,
      field,
    );
  });
  return checked;
}
