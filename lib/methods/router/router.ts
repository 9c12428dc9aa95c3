/**
 * GRPO for routing: learn which model (or prompt variant) to use per query class from rewards,
 * with no value model. A faithful port of OpenJarvis's `GRPORouterPolicy` (openjarvis
 * grpo_policy.py): samples are buffered; `update()` groups them by query class, turns each
 * group's rewards into advantages (reward - mean) / std with the population std (1 when it is
 * 0), and adds learningRate * advantage to the weight of the model that earned it. `route()`
 * picks uniformly at random until a class has `minSamples` samples, then samples from
 * softmax(weights / temperature).
 *
 * Differences from OpenJarvis: randomness comes from an injectable seeded `Rng` (not Python's
 * global `random`), the state (weights, counts and the pending buffer) round-trips through
 * `toJSON()` / `GrpoRouter.fromJSON()`, and OpenJarvis's unused `group_size` option is left out.
 */
import { InvalidInputError } from '../../errors.js';
import { mulberry32, randomInt, type Rng } from '../../math/random.js';
import { softmax } from '../../math/stats.js';
import { deriveQueryClass, type RoutingContext } from './query-class.js';

export interface GrpoRouterOptions {
  /** Step size of the weight update; default 0.1. */
  learningRate?: number;
  /** Samples a query class needs before its weights are used; default 5. */
  minSamples?: number;
  /** Softmax temperature over the weights; default 1. */
  temperature?: number;
  /** Source of randomness; default `mulberry32(seed)`. */
  rng?: Rng;
  /** Seed of the default generator; default 0. */
  seed?: number;
}

export interface RouterSample {
  queryClass: string;
  model: string;
  reward: number;
}

export type RouterUpdateStats =
  | { updated: false; reason: 'no samples' }
  | { updated: true; samplesProcessed: number; groups: number; updatesApplied: number; totalUpdates: number };

/** The router's state as plain JSON; `weights[model][queryClass]`. */
export interface GrpoRouterState {
  version: 1;
  learningRate: number;
  minSamples: number;
  temperature: number;
  weights: Record<string, Record<string, number>>;
  sampleCounts: Record<string, number>;
  totalUpdates: number;
  buffer: RouterSample[];
}

/**
 * Learns which model (or prompt variant) to route each query class to from rewards: `route()`
 * picks a model, `addSample()` records the reward it earned, `update()` applies the buffered
 * samples; the state round-trips through `toJSON()` / `GrpoRouter.fromJSON()`.
 *
 * @example
 * ```ts
 * const router = new GrpoRouter({ seed: 1 });
 * const model = router.route({ queryClass: 'math' }, ['small', 'large']);
 * router.addSample('math', model, 1);
 * router.update();
 * ```
 */
export class GrpoRouter {
  readonly learningRate: number;
  readonly minSamples: number;
  readonly temperature: number;
  private readonly rng: Rng;
  private weights = new Map<string, Map<string, number>>();
  private sampleCounts = new Map<string, number>();
  private buffer: RouterSample[] = [];
  private updates = 0;

  constructor(options: GrpoRouterOptions = {}) {
    this.learningRate = finite('learningRate', options.learningRate ?? 0.1);
    const minSamples = options.minSamples ?? 5;
    if (!Number.isInteger(minSamples) || minSamples < 0) {
      throw new InvalidInputError('minSamples', `must be an integer >= 0, got ${String(minSamples)}.`);
    }
    this.minSamples = minSamples;
    this.temperature = finite('temperature', options.temperature ?? 1);
    if (this.temperature <= 0) throw new InvalidInputError('temperature', `must be > 0, got ${this.temperature}.`);
    this.rng = options.rng ?? mulberry32(options.seed ?? 0);
  }

  /** Picks a model for the query: uniformly while its class has too few samples, else by softmax. */
  route(context: RoutingContext | string, models: readonly string[]): string {
    checkModels(models);
    const queryClass = deriveQueryClass(context);
    if (this.sampleCount(queryClass) < this.minSamples) return models[randomInt(this.rng, models.length)];
    const probs = this.probabilities(queryClass, models);
    const r = this.rng();
    let cumulative = 0;
    for (let i = 0; i < probs.length; i++) {
      cumulative += probs[i];
      if (r <= cumulative) return models[i];
    }
    return models[models.length - 1];
  }

  /** softmax(weight / temperature) over `models` for a query class (unknown weights are 0). */
  probabilities(queryClass: string, models: readonly string[]): number[] {
    checkModels(models);
    return softmax(
      models.map((m) => this.weight(m, queryClass)),
      this.temperature,
    );
  }

  /** Buffers one observed reward; weights change only on `update()`. */
  addSample(queryClass: string, model: string, reward: number): void {
    if (typeof queryClass !== 'string' || queryClass === '') {
      throw new InvalidInputError('queryClass', 'must be a non-empty string.');
    }
    if (typeof model !== 'string' || model === '') throw new InvalidInputError('model', 'must be a non-empty string.');
    finite('reward', reward);
    this.buffer.push({ queryClass, model, reward });
    this.sampleCounts.set(queryClass, this.sampleCount(queryClass) + 1);
  }

  /** Applies the GRPO update to the buffered samples and clears the buffer. */
  update(): RouterUpdateStats {
    if (this.buffer.length === 0) return { updated: false, reason: 'no samples' };
    const groups = new Map<string, RouterSample[]>();
    for (const sample of this.buffer) {
      const group = groups.get(sample.queryClass);
      if (group) group.push(sample);
      else groups.set(sample.queryClass, [sample]);
    }
    let updatesApplied = 0;
    for (const [queryClass, samples] of groups) {
      // A single sample has nothing to be relative to.
      if (samples.length < 2) continue;
      let sum = 0;
      for (const s of samples) sum += s.reward;
      const meanReward = sum / samples.length;
      let squares = 0;
      for (const s of samples) squares += (s.reward - meanReward) ** 2;
      const variance = squares / samples.length;
      const stdReward = variance > 0 ? Math.sqrt(variance) : 1;
      for (const s of samples) {
        const advantage = (s.reward - meanReward) / stdReward;
        this.setWeight(s.model, queryClass, this.weight(s.model, queryClass) + this.learningRate * advantage);
        updatesApplied++;
      }
    }
    this.updates++;
    const samplesProcessed = this.buffer.length;
    this.buffer = [];
    return { updated: true, samplesProcessed, groups: groups.size, updatesApplied, totalUpdates: this.updates };
  }

  /** Forgets all weights, counts and buffered samples. */
  reset(): void {
    this.weights = new Map();
    this.sampleCounts = new Map();
    this.buffer = [];
    this.updates = 0;
  }

  weight(model: string, queryClass: string): number {
    return this.weights.get(model)?.get(queryClass) ?? 0;
  }

  sampleCount(queryClass: string): number {
    return this.sampleCounts.get(queryClass) ?? 0;
  }

  get totalUpdates(): number {
    return this.updates;
  }

  /** Samples added since the last `update()`. */
  get pendingSamples(): readonly RouterSample[] {
    return this.buffer;
  }

  toJSON(): GrpoRouterState {
    const weights: Record<string, Record<string, number>> = {};
    for (const [model, byClass] of this.weights) weights[model] = Object.fromEntries(byClass);
    return {
      version: 1,
      learningRate: this.learningRate,
      minSamples: this.minSamples,
      temperature: this.temperature,
      weights,
      sampleCounts: Object.fromEntries(this.sampleCounts),
      totalUpdates: this.updates,
      buffer: this.buffer.map((s) => ({ ...s })),
    };
  }

  /** Restores a router from `toJSON()` output (an object or its JSON text). */
  static fromJSON(state: GrpoRouterState | string, options: Pick<GrpoRouterOptions, 'rng' | 'seed'> = {}): GrpoRouter {
    let data: unknown = state;
    if (typeof state === 'string') {
      try {
        data = JSON.parse(state);
      } catch (error) {
        throw new InvalidInputError('state', 'is not valid JSON; pass the output of router.toJSON().', { cause: error });
      }
    }
    const s = checkState(data);
    const router = new GrpoRouter({ ...options, learningRate: s.learningRate, minSamples: s.minSamples, temperature: s.temperature });
    for (const [model, byClass] of Object.entries(s.weights)) {
      for (const [queryClass, w] of Object.entries(byClass)) router.setWeight(model, queryClass, w);
    }
    for (const [queryClass, count] of Object.entries(s.sampleCounts)) router.sampleCounts.set(queryClass, count);
    router.updates = s.totalUpdates;
    router.buffer = s.buffer.map((x) => ({ queryClass: x.queryClass, model: x.model, reward: x.reward }));
    return router;
  }

  private setWeight(model: string, queryClass: string, value: number): void {
    let byClass = this.weights.get(model);
    if (!byClass) this.weights.set(model, (byClass = new Map()));
    byClass.set(queryClass, value);
  }
}

function checkModels(models: readonly string[]): void {
  if (!Array.isArray(models) || models.length === 0) {
    throw new InvalidInputError('models', 'is empty; give at least one model to route between.');
  }
}

function finite(argument: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidInputError(argument, `must be a finite number, got ${String(value)}.`);
  }
  return value;
}

function checkState(data: unknown): GrpoRouterState {
  const bad = (what: string): never => {
    throw new InvalidInputError('state', `${what}; pass the output of router.toJSON().`);
  };
  if (data === null || typeof data !== 'object') return bad('is not an object');
  const s = data as Partial<GrpoRouterState>;
  if (s.version !== 1) bad(`has version ${String(s.version)}, expected 1`);
  for (const key of ['learningRate', 'minSamples', 'temperature', 'totalUpdates'] as const) {
    if (typeof s[key] !== 'number' || !Number.isFinite(s[key])) bad(`has no finite ${key}`);
  }
  const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  const isNumber = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v);
  if (!isRecord(s.weights)) return bad('has no weights object');
  for (const byClass of Object.values(s.weights)) {
    if (!isRecord(byClass) || !Object.values(byClass).every(isNumber)) bad('has a malformed weights entry');
  }
  if (!isRecord(s.sampleCounts) || !Object.values(s.sampleCounts).every(isNumber)) bad('has malformed sampleCounts');
  if (!Array.isArray(s.buffer)) return bad('has no buffer array');
  for (const x of s.buffer) {
    if (!isRecord(x) || typeof x.queryClass !== 'string' || typeof x.model !== 'string' || !isNumber(x.reward)) {
      bad('has a malformed buffered sample');
    }
  }
  return s as GrpoRouterState;
}
