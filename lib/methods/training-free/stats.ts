/** A training-free epoch's statistics: its groups' rewards, the library after it, its operations. */
import type { ExperienceLibrary } from '../../experience/types.js';
import type { StepPayloadBase, StepRecord } from '../../store/records/index.js';
import { payloadOf } from '../../store/records/step.js';
import { stepStats } from '../../run/stats.js';
import type { EpochStats } from './events.js';

/**
 * Aggregates the committed steps of one epoch; `library` is the library after its last step. Steps
 * of another method (the playground's table of any run) count no operations.
 */
export function epochStats(epoch: number, steps: readonly StepRecord<StepPayloadBase>[], library: ExperienceLibrary): EpochStats {
  const items = steps.flatMap((s) => s.items);
  const stats = stepStats(items);
  const updates = steps.map((s) => payloadOf(s, 'training-free'));
  const count = (kind: string) => updates.reduce((n, u) => n + (u?.applied.filter((a) => a.operation === kind).length ?? 0), 0);
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
      skipped: updates.reduce((n, u) => n + (u?.skippedOperations.filter((k) => k.reason !== 'NONE').length ?? 0), 0),
    },
    warnings: steps.reduce((n, s) => n + s.warnings.length + s.items.reduce((m, item) => m + item.warnings.length, 0), 0),
  };
}
