/**
 * What every method's options share: the reward functions, the handles a run needs besides its
 * stored configuration, the sampling options, and the checks of numbers, handles and run ids.
 */
import { InvalidInputError } from '../errors.js';
import type { EpochHook } from './groups.js';
import type { Policy } from '../core/policy.js';
import type { RewardFunction } from '../core/reward.js';
import type { Store } from '../store/store.js';

/** The callables and handles every method's run needs besides its stored configuration. */
export interface LoopHandles<P extends Policy = Policy> {
  /** Produces the rollouts. */
  policy: P;
  /** Reward functions, in the order of the run's reward columns. */
  rewards: RewardFunction[];
  /** Where the run is kept. Default: a new `MemoryStore` (lost with the page). */
  store?: Store;
  /** Cancels within one step; the run stays resumable from its first unfinished item. */
  signal?: AbortSignal;
  /**
   * Called once per finished epoch, after its last step is committed, with every group of that
   * epoch as export groups (`itemResultGroup`): `exportEveryEpoch(jsonlFileSink(path))` appends
   * them as TRL-ready JSONL while training goes on. An epoch that finishes after a resume
   * still hands over all its groups, those done before the resume included.
   */
  onEpoch?: EpochHook;
}

/** Sampling settings the gradient and router loops take alike (each documents its own temperature and seed). */
export interface GroupSamplingOptions {
  topK?: number;
  topP?: number;
  minP?: number;
  /** Default 32. */
  maxNewTokens?: number;
  /** Shuffle the dataset each epoch (seeded); default true. */
  shuffle?: boolean;
}

/** Defaults of `GroupSamplingOptions`: no top-k, top-p or min-p filtering, 32 tokens, shuffled. */
export const GROUP_SAMPLING_DEFAULTS = { topK: 0, topP: 1, minP: 0, maxNewTokens: 32, shuffle: true };


/** An integer from `min` to `max`; `fallback` when absent. */
export function integer(value: number | undefined, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max) throw new InvalidInputError(name, `expected an integer from ${min} to ${max}, got ${v}.`);
  return v;
}

/** A finite number from `min` (or, `open`, above it) up to `max`; `fallback` when absent. */
export function real(value: number | undefined, name: string, fallback: number, min: number, max: number, open = false): number {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (open && v === min)) {
    throw new InvalidInputError(name, `expected a number ${open ? 'above' : 'from'} ${min}${open ? ' up' : ''} to ${max}, got ${v}.`);
  }
  return v;
}

export function validateHandles(handles: LoopHandles): void {
  // A method's start checks its options here first, before it reads any of them.
  if (!handles || typeof handles !== 'object') throw new InvalidInputError('options', 'expected an options object.');
  if (!handles.policy || typeof handles.policy.generateGroup !== 'function') {
    throw new InvalidInputError('policy', 'expected a Policy (an object with generateGroup).');
  }
  if (handles.onEpoch !== undefined && typeof handles.onEpoch !== 'function') {
    throw new InvalidInputError('onEpoch', 'expected a function (for example exportEveryEpoch(sink)).');
  }
  if (!Array.isArray(handles.rewards) || handles.rewards.length === 0) {
    throw new InvalidInputError('rewards', 'give at least one reward function ({ name, score }).');
  }
  const names = new Set<string>();
  handles.rewards.forEach((reward, i) => {
    if (!reward || typeof reward.name !== 'string' || reward.name === '') throw new InvalidInputError(`rewards[${i}].name`, 'expected a non-empty string.');
    if (typeof reward.score !== 'function') throw new InvalidInputError(`rewards[${i}].score`, 'expected a function.');
    if (names.has(reward.name)) throw new InvalidInputError(`rewards[${i}].name`, `"${reward.name}" is used twice.`);
    names.add(reward.name);
    if (reward.weight !== undefined && !Number.isFinite(reward.weight)) throw new InvalidInputError(`rewards[${i}].weight`, 'expected a finite number.');
  });
}


/**
 * The reward functions of a resumed run, in the stored column order. The names must be the same
 * as when the run started (their weights come from the stored run).
 */
export function matchRewards(config: { rewards: ReadonlyArray<{ name: string }> }, rewards: RewardFunction[]): RewardFunction[] {
  const byName = new Map(rewards.map((r) => [r.name, r]));
  const stored = config.rewards.map((r) => r.name);
  const missing = stored.filter((name) => !byName.has(name));
  const extra = rewards.map((r) => r.name).filter((name) => !stored.includes(name));
  if (missing.length || extra.length) {
    throw new InvalidInputError(
      'rewards',
      `the run was started with rewards [${stored.join(', ')}]; pass the same functions to resume` +
        (missing.length ? ` (missing: ${missing.join(', ')})` : '') +
        (extra.length ? ` (not in the run: ${extra.join(', ')})` : '') +
        '.',
    );
  }
  return stored.map((name) => byName.get(name) as RewardFunction);
}

/** Run ids double as folder names in the file store: letters, digits, `.`, `_`, `-`. */
export function checkRunId(runId: unknown): string {
  if (typeof runId !== 'string' || !/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/.test(runId)) {
    throw new InvalidInputError('runId', 'use 1 to 128 letters, digits, ".", "_" or "-" (not starting with ".").');
  }
  return runId;
}
