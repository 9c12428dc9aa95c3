/** Reward statistics of a group, a step and an epoch (what the UI charts and the CLI tabulates). */
import { mean, std } from '../math/stats.js';
import type { ExperienceLibrary } from '../experience/types.js';
import type { GroupStats, ItemResult, StepRecord, StepStats } from '../store/records.js';
import type { EpochStats } from './events.js';

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

/** Aggregates the committed steps of one epoch; `library` is the library after its last step. */
export function epochStats(epoch: number, steps: readonly StepRecord[], library: ExperienceLibrary): EpochStats {
  const items = steps.flatMap((s) => s.items);
  const stats = stepStats(items);
  const count = (kind: string) => steps.reduce((n, s) => n + s.applied.filter((a) => a.operation === kind).length, 0);
  return {
    epoch,
    steps: steps.length,
    groups: stats.groups,
    zeroSpreadGroups: stats.zeroSpreadGroups,
    zeroSpreadFraction: stats.groups ? stats.zeroSpreadGroups / stats.groups : 0,
    rollouts: stats.rollouts,
    scorable: stats.scorable,
    meanReward: stats.meanReward,
    stdReward: stats.stdReward,
    lessons: library.entries.length,
    exemplars: library.exemplars.length,
    librarySize: library.entries.length + library.exemplars.length,
    operations: {
      added: count('ADD'),
      updated: count('UPDATE'),
      deleted: count('DELETE'),
      skipped: steps.reduce((n, s) => n + s.skippedOperations.filter((k) => k.reason !== 'NONE').length, 0),
    },
    warnings: steps.reduce((n, s) => n + s.warnings.length + s.items.reduce((m, item) => m + item.warnings.length, 0), 0),
  };
}
