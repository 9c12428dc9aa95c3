/**
 * Structural checks for everything that enters a store from outside (datasets, imported runs).
 * Errors are `InvalidInputError`s whose `argument` is the path to the bad field
 * (`steps[3].items[0].rollouts[2].logprobs`).
 */
import { InvalidInputError } from '../errors.js';
import { validateLibrary } from '../experience/normalize.js';
import type { ExperienceLibrary } from '../experience/types.js';
import type { ItemResult, RouterArm, RouterConfig, RunBundle, RunRecord, StepRecord, TrainingFreeConfig } from './records.js';
import { validateDataset } from '../core/dataset.js';
import type { RecordKind } from './record-kind.js';
import { arr, bool, fail, int, num, nullableNum, obj, oneOf, str, type Obj } from '../core/shape.js';
import { validateEvaluation, validateEvaluationConfig } from './validate-evaluation.js';
import { validateLoopConfig, validateRewardsAndPolicy } from './validate-fields.js';
import { GRADIENT_RECORD, LORA_RECORD } from './validate-training.js';

export type { RecordKind };
export { GRADIENT_RECORD, LORA_RECORD };

function validateConfig(value: unknown, at: string): TrainingFreeConfig {
  const c = obj(value, at);
  oneOf(c.mode, ['lessons', 'exemplars'] as const, `${at}.mode`);
  for (const key of ['groupSize', 'epochs', 'batchSize', 'concurrency', 'maxNewTokens', 'criticMaxNewTokens'] as const) int(c[key], `${at}.${key}`, 1);
  for (const key of ['lessonsPerGroup', 'topK', 'seed', 'experienceTokenBudget', 'maxExperienceLength', 'maxExemplars'] as const) int(c[key], `${at}.${key}`);
  for (const key of ['temperature', 'topP', 'minP', 'criticTemperature', 'exemplarThreshold'] as const) num(c[key], `${at}.${key}`);
  bool(c.givenGroundTruth, `${at}.givenGroundTruth`);
  bool(c.shuffle, `${at}.shuffle`);
  const templates = obj(c.templates, `${at}.templates`);
  for (const key of ['prompt', 'summary', 'critique', 'groupUpdate', 'batchMerge', 'repair', 'criticSystem'] as const) {
    str(templates[key], `${at}.templates.${key}`);
  }
  validateRewardsAndPolicy(c, at);
  const critic = obj(c.critic, `${at}.critic`);
  str(critic.model, `${at}.critic.model`);
  str(critic.backend, `${at}.critic.backend`);
  return c as unknown as TrainingFreeConfig;
}

/**
 * A router run's arms: at least two, unique non-empty ids, labels, an optional instruction and an
 * optional temperature scale above 0 (up to 10). Returns clean copies.
 */
export function validateArms(value: unknown, at = 'arms'): RouterArm[] {
  const arms = arr(value, at);
  if (arms.length < 2) fail(at, `has ${arms.length} arm${arms.length === 1 ? '' : 's'}; a router needs at least two to choose between.`);
  const ids = new Set<string>();
  return arms.map((value, i) => {
    const a = obj(value, `${at}[${i}]`);
    const id = str(a.id, `${at}[${i}].id`);
    if (id.trim() === '') fail(`${at}[${i}].id`, 'expected a non-empty string.');
    if (ids.has(id)) fail(`${at}[${i}].id`, `"${id}" is used by an earlier arm; give each arm its own id.`);
    ids.add(id);
    const arm: RouterArm = { id, label: str(a.label, `${at}[${i}].label`) };
    if (a.instruction !== undefined) arm.instruction = str(a.instruction, `${at}[${i}].instruction`);
    if (a.temperatureScale !== undefined) {
      const scale = a.temperatureScale;
      if (typeof scale !== 'number' || !Number.isFinite(scale) || scale <= 0 || scale > 10) {
        fail(`${at}[${i}].temperatureScale`, `expected a number above 0 up to 10, got ${String(scale)}.`);
      }
      arm.temperatureScale = scale;
    }
    return arm;
  });
}

function validateRouterConfig(value: unknown, at: string): RouterConfig {
  const c = validateLoopConfig(value, at);
  validateArms(c.arms, `${at}.arms`);
  const router = obj(c.router, `${at}.router`);
  for (const key of ['learningRate', 'temperature'] as const) num(router[key], `${at}.router.${key}`);
  int(router.minSamples, `${at}.router.minSamples`);
  return c as unknown as RouterConfig;
}

function validateRun(value: unknown, at: string): RunRecord {
  const run = obj(value, at);
  str(run.id, `${at}.id`);
  const kind = recordKindOf(run.kind, `${at}.kind`);
  oneOf(run.status, ['running', 'aborted', 'failed', 'completed'] as const, `${at}.status`);
  if (run.error !== undefined) str(run.error, `${at}.error`);
  str(run.createdAt, `${at}.createdAt`);
  str(run.updatedAt, `${at}.updatedAt`);
  kind.config(run.config, `${at}.config`);
  validateLibrary(run.initialLibrary, `${at}.initialLibrary`);
  int(run.itemCount, `${at}.itemCount`, 1);
  const config = run.config as Obj;
  if (config.evaluation !== undefined) validateDataset(validateEvaluationConfig(config.evaluation, `${at}.config.evaluation`).items, `${at}.config.evaluation.items`);
  if (run.evaluations !== undefined) arr(run.evaluations, `${at}.evaluations`).forEach((e, i) => validateEvaluation(e, `${at}.evaluations[${i}]`));
  return run as unknown as RunRecord;
}

function validateItemResult(value: unknown, at: string, itemCount: number, kind: RecordKind, config: Obj): ItemResult {
  const r = obj(value, at);
  int(r.step, `${at}.step`, 1);
  int(r.epoch, `${at}.epoch`, 1);
  if (int(r.index, `${at}.index`) >= itemCount) fail(`${at}.index`, `is not below the dataset size ${itemCount}.`);
  int(r.position, `${at}.position`);
  obj(r.prompt, `${at}.prompt`);
  arr(r.experienceIds, `${at}.experienceIds`).forEach((id, i) => str(id, `${at}.experienceIds[${i}]`));
  arr(r.rollouts, `${at}.rollouts`).forEach((value, i) => {
    const p = `${at}.rollouts[${i}]`;
    const rollout = obj(value, p);
    str(rollout.text, `${p}.text`);
    arr(rollout.tokenIds, `${p}.tokenIds`).forEach((t, j) => int(t, `${p}.tokenIds[${j}]`));
    arr(rollout.logprobs, `${p}.logprobs`).forEach((l, j) => num(l, `${p}.logprobs[${j}]`));
    if (rollout.sampledLogprobs !== undefined) {
      const sampled = arr(rollout.sampledLogprobs, `${p}.sampledLogprobs`);
      if (sampled.length !== (rollout.tokenIds as unknown[]).length) fail(`${p}.sampledLogprobs`, 'must hold one log-prob per token.');
      sampled.forEach((l, j) => num(l, `${p}.sampledLogprobs[${j}]`));
    }
    oneOf(rollout.finishReason, ['eos', 'length', 'stop', 'abort'] as const, `${p}.finishReason`);
    arr(rollout.rewards, `${p}.rewards`).forEach((v, j) => nullableNum(v, `${p}.rewards[${j}]`));
    nullableNum(rollout.reward, `${p}.reward`);
    num(rollout.advantage, `${p}.advantage`);
    if (rollout.summary !== undefined) str(rollout.summary, `${p}.summary`);
    if (kind.rollout) kind.rollout(rollout, p, config);
    else if (rollout.arm !== undefined) fail(`${p}.arm`, 'only router runs route completions to arms.');
  });
  if (r.resamples !== undefined) int(r.resamples, `${at}.resamples`, 1);
  const stats = obj(r.stats, `${at}.stats`);
  int(stats.scorable, `${at}.stats.scorable`);
  num(stats.spread, `${at}.stats.spread`);
  arr(r.warnings, `${at}.warnings`);
  return r as unknown as ItemResult;
}

function validateStep(value: unknown, at: string, itemCount: number, kind: RecordKind, config: Obj): StepRecord {
  const s = obj(value, at);
  int(s.step, `${at}.step`, 1);
  int(s.epoch, `${at}.epoch`, 1);
  int(s.batch, `${at}.batch`, 1);
  arr(s.items, `${at}.items`).forEach((item, i) => validateItemResult(item, `${at}.items[${i}]`, itemCount, kind, config));
  obj(s.stats, `${at}.stats`);
  arr(s.warnings, `${at}.warnings`);
  str(s.committedAt, `${at}.committedAt`);
  const payload = obj(s.payload, `${at}.payload`);
  if (payload.kind !== kind.kind) fail(`${at}.payload.kind`, `is ${JSON.stringify(payload.kind)}; a ${kind.kind} run's steps carry "${kind.kind}" payloads.`);
  kind.step?.(payload, `${at}.payload`, config);
  return s as unknown as StepRecord;
}

/** A training-free step's payload: the batch update's lists and a valid library. */
function validateTrainingFreeStep(p: Obj, at: string): void {
  arr(p.proposed, `${at}.proposed`);
  arr(p.applied, `${at}.applied`);
  arr(p.skippedOperations, `${at}.skippedOperations`);
  validateLibrary(p.library, `${at}.library`);
}

/** A training-free payload as read back: its library normalised (a library stored before exemplars gets its empty list). */
function readTrainingFreeStep(p: Obj, at: string): Obj {
  for (const key of ['proposed', 'applied', 'skippedOperations'] as const) arr(p[key], `${at}.${key}`);
  return { ...p, library: validateLibrary(p.library, `${at}.library`) };
}

/** The arm ids of a router run's config (its rollouts must name one of them). */
function armIds(config: Obj): Set<string> {
  return new Set((config.arms as RouterArm[]).map((a) => a.id));
}

/**
 * A stored router state (`GrpoRouter.toJSON()`, version 1) that `GrpoRouter.fromJSON` restores:
 * finite numbers, a temperature above 0, a whole `minSamples`, finite weights by arm and query
 * class, sample counts, and the buffered samples. Checked here as plain data, so the store loads
 * no router code.
 */
function validateRouterState(value: unknown, at: string): void {
  const state = obj(value, at);
  if (state.version !== 1) fail(`${at}.version`, `is ${String(state.version)}; this webgrpo reads router states of version 1.`);
  for (const key of ['learningRate', 'totalUpdates'] as const) num(state[key], `${at}.${key}`);
  int(state.minSamples, `${at}.minSamples`);
  if (num(state.temperature, `${at}.temperature`) <= 0) fail(`${at}.temperature`, 'expected a number above 0.');
  for (const [arm, byClass] of Object.entries(obj(state.weights, `${at}.weights`))) {
    for (const [queryClass, weight] of Object.entries(obj(byClass, `${at}.weights.${arm}`))) num(weight, `${at}.weights.${arm}.${queryClass}`);
  }
  for (const [queryClass, count] of Object.entries(obj(state.sampleCounts, `${at}.sampleCounts`))) num(count, `${at}.sampleCounts.${queryClass}`);
  arr(state.buffer, `${at}.buffer`).forEach((sample, i) => {
    const p = `${at}.buffer[${i}]`;
    const x = obj(sample, p);
    str(x.queryClass, `${p}.queryClass`);
    str(x.model, `${p}.model`);
    num(x.reward, `${p}.reward`);
  });
}

function validateRouting(value: unknown, at: string, arms: ReadonlySet<string>): void {
  const routing = obj(value, at);
  validateRouterState(routing.state, `${at}.state`);
  for (const [queryClass, byArm] of Object.entries(obj(routing.probabilities, `${at}.probabilities`))) {
    const p = `${at}.probabilities.${queryClass}`;
    for (const [arm, probability] of Object.entries(obj(byArm, p))) {
      if (!arms.has(arm)) fail(`${p}.${arm}`, 'is not one of the run\'s arms.');
      num(probability, `${p}.${arm}`);
    }
  }
  bool(obj(routing.stats, `${at}.stats`).updated, `${at}.stats.updated`);
}

/** Checks a whole run (an import) and that its parts agree: step numbers, item indices, counts. */
export function validateBundle(value: unknown, at = 'run'): RunBundle {
  const b = obj(value, at);
  const run = validateRun(b.run, `${at}.run`);
  const items = validateDataset(b.items, `${at}.items`);
  if (items.length !== run.itemCount) fail(`${at}.items`, `has ${items.length} items but the run says ${run.itemCount}.`);
  const kind = recordKindOf(run.kind, `${at}.run.kind`);
  const config = run.config as unknown as Obj;
  const steps = arr(b.steps, `${at}.steps`).map((step, i) => {
    const record = validateStep(step, `${at}.steps[${i}]`, items.length, kind, config);
    if (record.step !== i + 1) fail(`${at}.steps[${i}].step`, `expected ${i + 1}: steps must be consecutive from 1.`);
    return record;
  });
  const pending = arr(b.pending ?? [], `${at}.pending`).map((result, i) => {
    const record = validateItemResult(result, `${at}.pending[${i}]`, items.length, kind, config);
    if (record.step !== steps.length + 1) fail(`${at}.pending[${i}].step`, `expected ${steps.length + 1}, the step after the last committed one.`);
    return record;
  });
  const bundle: RunBundle = { run, items, steps, pending };
  if (b.adapter !== undefined) {
    if (!kind.adapter) fail(`${at}.adapter`, `${run.kind} runs carry no adapter.`);
    const step = kind.adapter(b.adapter, `${at}.adapter`);
    if (step !== steps.length) fail(`${at}.adapter.step`, `is ${step}; the checkpoint must be the last committed step's (${steps.length}).`);
    bundle.adapter = b.adapter as RunBundle['adapter'];
  }
  return bundle;
}

export const TRAINING_FREE_RECORD: RecordKind = {
  kind: 'training-free',
  config: validateConfig,
  step: validateTrainingFreeStep,
  read: readTrainingFreeStep,
  library: (payload) => payload.library as ExperienceLibrary,
};
export const ROUTER_RECORD: RecordKind = {
  kind: 'router',
  config: validateRouterConfig,
  step: (p, at, config) => validateRouting(p.routing, `${at}.routing`, armIds(config)),
  rollout: (rollout, at, config) => {
    if (!armIds(config).has(str(rollout.arm, `${at}.arm`))) fail(`${at}.arm`, `expected the id of one of the run's arms, got "${String(rollout.arm)}".`);
  },
};

const RECORD_KINDS = new Map<string, RecordKind>([TRAINING_FREE_RECORD, GRADIENT_RECORD, LORA_RECORD, ROUTER_RECORD].map((k) => [k.kind, k]));

/** Makes runs of `kind.kind` known to imports and validation. Registering the same kind again replaces it. */
export function registerRecordKind(kind: RecordKind): void {
  if (!kind || typeof kind.kind !== 'string' || kind.kind === '' || typeof kind.config !== 'function') {
    throw new InvalidInputError('record', 'expected { kind, config(value, at) } with a non-empty kind.');
  }
  RECORD_KINDS.set(kind.kind, kind);
}

/** The registered record kind of `kind`, or undefined. */
export function recordKind(kind: string): RecordKind | undefined {
  return RECORD_KINDS.get(kind);
}

function recordKindOf(value: unknown, at: string): RecordKind {
  const kind = RECORD_KINDS.get(str(value, at));
  if (!kind) fail(at, `is "${String(value)}"; known kinds are ${[...RECORD_KINDS.keys()].map((k) => `"${k}"`).join(', ')} (a method's runs are known once it is registered).`);
  return kind;
}
