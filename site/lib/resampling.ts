/**
 * What DAPO's dynamic sampling did in one step, in words: which groups came back flat and were
 * sampled again, how many extra samplings that took, and how many stayed flat and were left out of
 * the update. Pure; null for a run that does not resample.
 */
import type { ItemResult, RunRecord, StepStats } from '../../lib/index.js';
import { plural } from './plural.js';

/** The run's bound on extra samplings of a flat group, or null when it does not resample. */
export function maxResamples(run: Pick<RunRecord, 'config'>): number | null {
  const config = run.config as { dynamicSampling?: { maxResamples: number } };
  return config.dynamicSampling ? config.dynamicSampling.maxResamples : null;
}

/**
 * `stats`: the committed step's (absent while the step is in progress, when the counts come from
 * its finished groups and nothing is dropped yet).
 */
export function resamplingNote(run: Pick<RunRecord, 'config'>, groups: readonly ItemResult[], stats: StepStats | undefined): string | null {
  const bound = maxResamples(run);
  if (bound === null) return null;
  const resampled = groups.filter((g) => (g.resamples ?? 0) > 0).sort((a, b) => a.index - b.index);
  const count = stats?.resampledGroups ?? resampled.length;
  const samplings = stats?.resamples ?? resampled.reduce((n, g) => n + (g.resamples ?? 0), 0);
  const dropped = stats?.droppedGroups ?? 0;
  const head = `Dynamic sampling (a flat group sampled again up to ${plural(bound, 'time')}): `;
  if (count === 0) return `${head}no group of this step came back flat, none sampled again.`;
  const which = resampled.map((g) => `#${g.index + 1} (×${g.resamples})`).join(', ');
  const left = stats === undefined ? '' : dropped === 0 ? '; every one then differed and counts in the update' : `; ${dropped} stayed flat and ${dropped === 1 ? 'was' : 'were'} left out of the update`;
  return `${head}${count} ${count === 1 ? 'group' : 'groups'} sampled again, ${plural(samplings, 'extra sampling')} in all${which ? `: prompt ${which}` : ''}${left}.`;
}
