/**
 * Which items each step works on. Epoch e visits every item once, in a seeded shuffle of the
 * dataset, in batches of `batchSize` (the last batch of an epoch may be smaller: no item is
 * dropped). Steps are numbered from 1 across epochs. Everything is computed from the stored
 * config, so a resumed run walks exactly the same schedule.
 */
import type { LoopConfig } from '../store/records/index.js';
import type { Progress } from './events.js';
import { deriveSeed, seededShuffle } from './random.js';

/** Where one step of a run stands in its schedule: what a method's hooks get as `ctx.plan`. */
export interface StepPlan {
  /** 1-based over the whole run. */
  step: number;
  epoch: number;
  /** 1-based within the epoch. */
  batch: number;
  /** Dataset indices, in batch order. */
  indices: number[];
  /** Items of the whole run finished before this step starts. */
  itemsBefore: number;
  /** Whether this step ends its epoch. */
  lastOfEpoch: boolean;
}

export class Schedule {
  readonly itemCount: number;
  readonly epochs: number;
  readonly stepsPerEpoch: number;
  readonly totalSteps: number;
  readonly totalItems: number;
  readonly #config: Pick<LoopConfig, 'batchSize' | 'epochs' | 'shuffle' | 'seed'>;
  readonly #orders = new Map<number, number[]>();

  constructor(config: Pick<LoopConfig, 'batchSize' | 'epochs' | 'shuffle' | 'seed'>, itemCount: number) {
    this.#config = config;
    this.itemCount = itemCount;
    this.epochs = config.epochs;
    this.stepsPerEpoch = Math.ceil(itemCount / config.batchSize);
    this.totalSteps = this.stepsPerEpoch * config.epochs;
    this.totalItems = itemCount * config.epochs;
  }

  /** The dataset order of an epoch. */
  order(epoch: number): number[] {
    let order = this.#orders.get(epoch);
    if (!order) {
      const indices = Array.from({ length: this.itemCount }, (_, i) => i);
      order = this.#config.shuffle ? seededShuffle(indices, deriveSeed(this.#config.seed, 'epoch', epoch)) : indices;
      this.#orders.set(epoch, order);
    }
    return order;
  }

  plan(step: number): StepPlan {
    const epoch = Math.floor((step - 1) / this.stepsPerEpoch) + 1;
    const batch = ((step - 1) % this.stepsPerEpoch) + 1;
    const start = (batch - 1) * this.#config.batchSize;
    const indices = this.order(epoch).slice(start, start + this.#config.batchSize);
    return {
      step,
      epoch,
      batch,
      indices,
      itemsBefore: (epoch - 1) * this.itemCount + start,
      lastOfEpoch: batch === this.stepsPerEpoch,
    };
  }
}

/** Where a run stands at `step`; before the schedule is known (the run not read yet), all zeros. */
export function progressAt(schedule: Schedule | undefined, step: number, itemsDone: number): Progress {
  return {
    step,
    totalSteps: schedule?.totalSteps ?? 0,
    epoch: schedule ? schedule.plan(Math.max(1, Math.min(step, schedule.totalSteps))).epoch : 1,
    epochs: schedule?.epochs ?? 0,
    itemsDone,
    totalItems: schedule?.totalItems ?? 0,
  };
}
