/**
 * One dataset item through one gradient step: a group sampled from the adapted policy, its rewards
 * and group-relative advantages, as the `ItemResult` every store keeps (the same record the
 * training-free loop writes, without experiences or critic).
 */
import type { Policy } from '../../policy/types.js';
import type { DatasetItem, GradientConfig, ItemResult } from '../../store/records.js';
import type { RewardFunction } from '../training-free/options.js';
import { promptOf, rolloutGroup } from '../../run/rollout.js';
import type { StepPlan } from '../../run/schedule.js';
import type { GradientEvent } from './events.js';

export interface GradientItemContext {
  policy: Policy;
  config: GradientConfig;
  rewards: RewardFunction[];
  signal: AbortSignal;
  emit: (event: GradientEvent) => Promise<void>;
}

export async function rolloutItem(ctx: GradientItemContext, plan: StepPlan, position: number, index: number, item: DatasetItem): Promise<ItemResult> {
  const { config, emit } = ctx;
  const ref = { step: plan.step, epoch: plan.epoch, item: index };
  const prompt = promptOf(item);
  await emit({ type: 'item-start', ...ref, position, prompt });

  // The group's own view; with 'batch' scaling the trainer rescales over all of the step's groups.
  const scale = config.loss.scaleRewards === 'batch' ? 'group' : config.loss.scaleRewards;
  const { rollouts, usage, stats } = await rolloutGroup(ctx, config, ref, item, prompt, scale);
  return { step: plan.step, epoch: plan.epoch, index, position, prompt, experienceIds: [], rollouts, usage, stats, warnings: [] };
}
