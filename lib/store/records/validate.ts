/**
 * Structural checks for everything that enters a store from outside (datasets, imported runs),
 * and of the config fields the loops share, which each method's config check builds on.
 * Errors are `InvalidInputError`s whose `argument` is the path to the bad field
 * (`steps[3].items[0].rollouts[2].logprobs`). The method's parts are checked by the run kind's
 * `RecordKind`, looked up in the records the caller hands over.
 */
import type { ItemResult, RunBundle, RunRecord, StepRecord } from './index.js';
import { validateDataset } from '../../core/dataset.js';
import type { RecordKind, RecordLookup } from './kind.js';
import { arr, bool, fail, int, num, nullableNum, obj, oneOf, str, type Obj } from '../../core/shape.js';

export type { RecordKind, RecordLookup };

function validateRun(value: unknown, at: string, records: RecordLookup): RunRecord {
  const run = obj(value, at);
  str(run.id, `${at}.id`);
  const kind = recordKindOf(run.kind, `${at}.kind`, records);
  oneOf(run.status, ['running', 'aborted', 'failed', 'completed'] as const, `${at}.status`);
  if (run.error !== undefined) str(run.error, `${at}.error`);
  str(run.createdAt, `${at}.createdAt`);
  str(run.updatedAt, `${at}.updatedAt`);
  kind.config(run.config, `${at}.config`);
  for (const [field, { read }] of Object.entries(kind.runFields ?? {})) read(run[field], `${at}.${field}`);
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
    kind.rollout?.(rollout, p, config);
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

/** Checks a whole run (an import) and that its parts agree: step numbers, item indices, counts. */
export function validateBundle(value: unknown, records: RecordLookup, at = 'run'): RunBundle {
  const b = obj(value, at);
  const run = validateRun(b.run, `${at}.run`, records);
  const items = validateDataset(b.items, `${at}.items`);
  if (items.length !== run.itemCount) fail(`${at}.items`, `has ${items.length} items but the run says ${run.itemCount}.`);
  const kind = recordKindOf(run.kind, `${at}.run.kind`, records);
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

function recordKindOf(value: unknown, at: string, records: RecordLookup): RecordKind {
  const kind = records.get(str(value, at));
  if (!kind) fail(at, `is "${String(value)}"; known kinds are ${[...records.keys()].map((k) => `"${k}"`).join(', ')} (a method's runs are known once it is registered).`);
  return kind;
}

/** The fields of `LoopConfig`: groups, schedule, sampling, rewards, policy, task. */
export function validateLoopConfig(value: unknown, at: string): Obj {
  const c = obj(value, at);
  for (const key of ['groupSize', 'epochs', 'batchSize', 'maxNewTokens'] as const) int(c[key], `${at}.${key}`, 1);
  for (const key of ['topK', 'seed'] as const) int(c[key], `${at}.${key}`);
  for (const key of ['temperature', 'topP', 'minP'] as const) num(c[key], `${at}.${key}`);
  bool(c.shuffle, `${at}.shuffle`);
  if (c.dynamicSampling !== undefined) int(obj(c.dynamicSampling, `${at}.dynamicSampling`).maxResamples, `${at}.dynamicSampling.maxResamples`);
  arr(c.rewards, `${at}.rewards`).forEach((r, i) => {
    const reward = obj(r, `${at}.rewards[${i}]`);
    str(reward.name, `${at}.rewards[${i}].name`);
    num(reward.weight, `${at}.rewards[${i}].weight`);
  });
  const info = obj(c.policy, `${at}.policy`);
  str(info.model, `${at}.policy.model`);
  str(info.backend, `${at}.policy.backend`);
  if (c.task !== undefined) str(c.task, `${at}.task`);
  return c;
}

/** A run's held-out split and how it is sampled and judged (its items are checked as a dataset by the caller). */
function validateEvaluationConfig(value: unknown, at: string): { items: unknown } {
  const c = obj(value, at);
  for (const key of ['every', 'samples', 'maxNewTokens'] as const) int(c[key], `${at}.${key}`, 1);
  int(c.seed, `${at}.seed`);
  if (num(c.temperature, `${at}.temperature`) < 0) fail(`${at}.temperature`, 'expected a number >= 0.');
  if (c.alsoGreedy !== undefined) bool(c.alsoGreedy, `${at}.alsoGreedy`);
  if (c.correct !== 'exact') {
    const rule = obj(c.correct, `${at}.correct`);
    str(rule.reward, `${at}.correct.reward`);
    num(rule.atLeast, `${at}.correct.atLeast`);
  }
  return { items: c.items };
}

/** One stored evaluation: its epoch, its aggregates and every item's samples. */
function validateEvaluation(value: unknown, at: string): void {
  const e = obj(value, at);
  int(e.epoch, `${at}.epoch`);
  int(e.step, `${at}.step`);
  str(e.evaluatedAt, `${at}.evaluatedAt`);
  validateEvaluated(e, at);
  if (e.greedyPass !== undefined) validateEvaluated(obj(e.greedyPass, `${at}.greedyPass`), `${at}.greedyPass`);
}

/** An evaluation's aggregates and every item's samples. */
function validateEvaluated(e: Record<string, unknown>, at: string): void {
  const summary = obj(e.summary, `${at}.summary`);
  for (const key of ['items', 'samples', 'judged'] as const) int(summary[key], `${at}.summary.${key}`);
  for (const key of ['meanReward', 'accuracy'] as const) nullableNum(summary[key], `${at}.summary.${key}`);
  for (const [k, v] of Object.entries(obj(summary.passAtK, `${at}.summary.passAtK`))) num(v, `${at}.summary.passAtK.${k}`);
  arr(e.items, `${at}.items`).forEach((value, i) => {
    const p = `${at}.items[${i}]`;
    const item = obj(value, p);
    int(item.index, `${p}.index`);
    obj(item.prompt, `${p}.prompt`);
    arr(item.samples, `${p}.samples`).forEach((sample, j) => {
      const q = `${p}.samples[${j}]`;
      const s = obj(sample, q);
      str(s.text, `${q}.text`);
      arr(s.rewards, `${q}.rewards`).forEach((v, k) => nullableNum(v, `${q}.rewards[${k}]`));
      nullableNum(s.reward, `${q}.reward`);
      if (s.correct !== null) bool(s.correct, `${q}.correct`);
    });
  });
}
