/** Reward statistics of a group, a step and an epoch (what the UI charts and the CLI tabulates). */
import { mean, std } from '../math/stats.js';
import type { GroupStats, ItemResult, StepStats } from '../store/records/index.js';

const finiteOrNull = (x: number): number | null => (Number.isFinite(x) ? x : null);

/** Mean and sample std (null with too few values) and spread of the scorable rewards. */
export function groupStats(rewards: ReadonlyArray<number | null>): GroupStats {
  const scorable = rewards.filter((r): r is number => r !== null);
  return {
    scorable: scorable.length,
    mean: finiteOrNull(mean(scorable)),
    std: finiteOrNull(std(scorable)),
    spread: scorable.length > 1 ? Math.max(...scorable) - Math.min(...scorable) : 0,
  };
}

/** A step's totals over its items: groups, groups with no reward spread, rollouts, scorable rollouts, and the mean and std of their rewards. */
export function stepStats(items: readonly ItemResult[]): StepStats {
  const rewards = items.flatMap((item) => item.rollouts.map((r) => r.reward)).filter((r): r is number => r !== null);
  return {
    groups: items.length,
    zeroSpreadGroups: items.filter((item) => item.stats.spread === 0).length,
    rollouts: items.reduce((n, item) => n + item.rollouts.length, 0),
    scorable: rewards.length,
    meanReward: finiteOrNull(mean(rewards)),
    stdReward: finiteOrNull(std(rewards)),
  };
}
