/**
 * Options of `routerGrpo`, their defaults, and their validation into the serialisable
 * `RouterConfig` stored with the run. The defaults suit the bundled tiny model: small groups,
 * short completions, a router that starts using its weights after a few samples per class.
 */
import { InvalidInputError } from '../../errors.js';
import type { RouterArm } from './arm.js';
import type { RouterConfig } from './record.js';
import type { DatasetItem } from '../../core/dataset.js';
import { validateArms } from './record.js';
import { GROUP_SAMPLING_DEFAULTS, integer, real, validateHandles, type GroupSamplingOptions, type LoopHandles } from '../../run/options.js';
import { GrpoRouter } from './router.js';
import type { EvaluationOption } from '../../run/held-out.js';

/** The common handles; the policy samples every arm's completions (the arms are prompt and sampling variants of it). */
export type RouterHandles = LoopHandles;

export interface RouterGrpoOptions extends RouterHandles, GroupSamplingOptions, EvaluationOption {
  dataset: DatasetItem[];
  /** What the router chooses between: at least two, with unique ids. */
  arms: RouterArm[];
  /** Completions per item, each routed on its own; default 4. */
  groupSize?: number;
  /** Passes over the dataset; default 1. */
  epochs?: number;
  /** Items per step; the router is updated once per step. Default 2. */
  batchSize?: number;
  /** The run's sampling temperature (each arm may scale it); default 1. */
  temperature?: number;
  /** Seed of the epoch order, every routing choice and every sampling call; default 0. */
  seed?: number;
  /** `GrpoRouter`'s options; its defaults (learning rate 0.1, 5 samples, temperature 1). */
  router?: { learningRate?: number; minSamples?: number; temperature?: number };
  /** Name of the built-in task the dataset came from (recorded with the run). */
  task?: string;
  /** Id of the new run. Default: a random UUID. */
  runId?: string;
}

/** The values `routerGrpo` uses for options left out (group size, epochs, batch size, temperature, seed, group sampling). */
export const ROUTER_DEFAULTS = {
  groupSize: 4,
  epochs: 1,
  batchSize: 2,
  temperature: 1,
  seed: 0,
  ...GROUP_SAMPLING_DEFAULTS,
};

export function resolveRouterConfig(options: RouterGrpoOptions): RouterConfig {
  validateHandles(options);
  const d = ROUTER_DEFAULTS;
  // GrpoRouter validates its options the way the loop will use them.
  const router = new GrpoRouter(options.router ?? {});
  const temperature = real(options.temperature, 'temperature', d.temperature, 0, 100);
  const topP = real(options.topP, 'topP', d.topP, 0, 1, true);
  const config: RouterConfig = {
    arms: validateArms(options.arms),
    router: { learningRate: router.learningRate, minSamples: router.minSamples, temperature: router.temperature },
    groupSize: integer(options.groupSize, 'groupSize', d.groupSize, 1, 64),
    epochs: integer(options.epochs, 'epochs', d.epochs, 1, 10_000),
    batchSize: integer(options.batchSize, 'batchSize', d.batchSize, 1),
    temperature,
    topK: integer(options.topK, 'topK', d.topK, 0),
    topP,
    minP: real(options.minP, 'minP', d.minP, 0, 1),
    maxNewTokens: integer(options.maxNewTokens, 'maxNewTokens', d.maxNewTokens, 1),
    rewards: options.rewards.map((r) => ({ name: r.name, weight: r.weight ?? 1 })),
    seed: integer(options.seed, 'seed', d.seed, 0, 2 ** 32 - 1),
    shuffle: options.shuffle ?? d.shuffle,
    policy: { ...options.policy.info },
  };
  if (typeof config.shuffle !== 'boolean') throw new InvalidInputError('shuffle', 'expected true or false.');
  if (options.task !== undefined) config.task = options.task;
  return config;
}
