import { describe, expect, it } from 'vitest';
import type { ItemResult, StepStats } from '../../lib/index.js';
import { maxResamples, resamplingNote } from '../../site/lib/resampling.js';

const run = (dynamicSampling?: { maxResamples: number }) => ({ config: { ...(dynamicSampling ? { dynamicSampling } : {}) } }) as never;
const group = (index: number, resamples?: number) => ({ index, ...(resamples ? { resamples } : {}) }) as ItemResult;
const stats = (s: Partial<StepStats>) => ({ groups: 4, zeroSpreadGroups: 0, rollouts: 16, scorable: 16, meanReward: 0, stdReward: 0, ...s }) as StepStats;

describe('what dynamic sampling did in a step', () => {
  it('says nothing for a run that does not resample', () => {
    expect(maxResamples(run())).toBeNull();
    expect(resamplingNote(run(), [group(0, 2)], stats({ resampledGroups: 1, resamples: 2, droppedGroups: 0 }))).toBeNull();
  });

  it('names the groups sampled again, the extra samplings and the groups left out', () => {
    const note = resamplingNote(run({ maxResamples: 3 }), [group(3, 3), group(0, 1), group(1)], stats({ resampledGroups: 2, resamples: 4, droppedGroups: 1 }));
    expect(note).toBe('Dynamic sampling (a flat group sampled again up to 3 times): 2 groups sampled again, 4 extra samplings in all: prompt #1 (×1), #4 (×3); 1 stayed flat and was left out of the update.');
  });

  it('says when every resampled group then differed, and when none came back flat', () => {
    const bound = run({ maxResamples: 1 });
    expect(resamplingNote(bound, [group(2, 1)], stats({ resampledGroups: 1, resamples: 1, droppedGroups: 0 }))).toBe(
      'Dynamic sampling (a flat group sampled again up to 1 time): 1 group sampled again, 1 extra sampling in all: prompt #3 (×1); every one then differed and counts in the update.',
    );
    expect(resamplingNote(bound, [group(0)], stats({ resampledGroups: 0, resamples: 0, droppedGroups: 0 }))).toBe('Dynamic sampling (a flat group sampled again up to 1 time): no group of this step came back flat, none sampled again.');
  });

  it('counts a step in progress from its finished groups, before anything is dropped', () => {
    expect(resamplingNote(run({ maxResamples: 3 }), [group(0, 3), group(1, 2)], undefined)).toBe('Dynamic sampling (a flat group sampled again up to 3 times): 2 groups sampled again, 5 extra samplings in all: prompt #1 (×3), #2 (×2).');
  });
});
