/**
 * The records of a router run (`routerGrpo`: a router learns which arm to send each query class
 * to): its config and arms, its step payload (the router after the step), the arm of each
 * rollout, and their checks as a store or an import reads them. A router state is checked as
 * plain data, so reading a store loads no router code.
 */
import type { RouterArm } from './arm.js';
import type { GrpoRouterState, RouterUpdateStats } from './router.js';
import type { LoopConfig, RunRecordOf } from '../../store/records/index.js';
import type { RecordKind } from '../../store/records/kind.js';
import { arr, bool, fail, int, num, obj, str, type Obj } from '../../core/shape.js';
import { validateLoopConfig } from '../../store/records/validate.js';

export type { RouterArm };

/** The resolved, serialisable options of a router run (`routerGrpo`); each completion of a group is routed on its own. */
export interface RouterConfig extends LoopConfig {
  arms: RouterArm[];
  /** `GrpoRouter`'s options. */
  router: { learningRate: number; minSamples: number; temperature: number };
}

/** The router after a step: its state (what a resume restores), what it would route to, the update. */
export interface StepRouting {
  state: GrpoRouterState;
  /** `probabilities[queryClass][armId]`, for every query class seen so far. */
  probabilities: Record<string, Record<string, number>>;
  stats: RouterUpdateStats;
}

/** A router step's payload: the router after the step's update. */
export interface RouterStepPayload {
  kind: 'router';
  routing: StepRouting;
}

declare module '../../store/records/run.js' {
  interface RunKinds {
    router: { config: RouterConfig; payload: RouterStepPayload };
  }
}

export type RouterRunRecord = RunRecordOf<'router'>;

declare module '../../store/records/item.js' {
  interface RolloutRecord {
    /** Router runs: the id of the arm this completion was routed to. */
    arm?: string;
  }
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

function validateRouterConfig(value: unknown, at: string): void {
  const c = validateLoopConfig(value, at);
  validateArms(c.arms, `${at}.arms`);
  const router = obj(c.router, `${at}.router`);
  for (const key of ['learningRate', 'temperature'] as const) num(router[key], `${at}.router.${key}`);
  int(router.minSamples, `${at}.router.minSamples`);
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

/** How a store checks and reads back a router run (`kind: 'router'`): its config, each step's routing state and each rollout's arm. */
export const ROUTER_RECORD: RecordKind = {
  kind: 'router',
  config: validateRouterConfig,
  step: (p, at, config) => validateRouting(p.routing, `${at}.routing`, armIds(config)),
  rollout: (rollout, at, config) => {
    if (!armIds(config).has(str(rollout.arm, `${at}.arm`))) fail(`${at}.arm`, `expected the id of one of the run's arms, got "${String(rollout.arm)}".`);
  },
};
