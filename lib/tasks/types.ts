import type { DatasetItem } from '../core/dataset.js';
import type { RewardFunction } from '../core/reward.js';

export interface DatasetOptions {
  /** Number of items. Each task has a small default. */
  size?: number;
  /** Seed of the generator: the same seed gives the same items. Default 0. */
  seed?: number;
}

/** A built-in task: a seeded dataset generator and verifiable reward functions for it. */
export interface Task {
  name: string;
  description: string;
  dataset(options?: DatasetOptions): DatasetItem[];
  rewards: RewardFunction[];
}
