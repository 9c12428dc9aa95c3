/**
 * The gradient method's update step around either adapter's engine: the trainer made from a run's
 * config (resuming its adaptive entropy), the step's `numIterations` updates on the driver's
 * groups with the driver's advantages, and an epoch's statistics.
 */
import { throwIfAborted } from '../../errors.js';
import type { TrainStepMetrics } from '../../train/metrics.js';
import { groupRolloutBatch, rolloutSampling } from '../../train/rollouts.js';
import type { AdvantageResult } from '../../math/advantages.js';
import type { PromptInput } from '../../core/policy.js';
import type { Reporter } from '../../run/method.js';
import type { StepPlan } from '../../run/schedule.js';
import { stepStats } from '../../run/stats.js';
import type { ItemResult, StepRecord } from '../../store/records/index.js';
import type { GradientConfig, GradientStepPayload, LoraStepPayload } from './record.js';
import type { TrainingEngine } from '../../train/engine.js';
import { GrpoTrainer } from '../../train/trainer.js';
import { grpoConfigOf } from './training-options.js';

/** An epoch of a gradient or LoRA run, as its `epoch-end` event reports it. */
export interface GradientEpochStats {
  epoch: number;
  steps: number;
  groups: number;
  zeroSpreadGroups: number;
  rollouts: number;
  meanReward: number | null;
  stdReward: number | null;
  /** The last update's loss, KL and gradient norm in the epoch. */
  loss: number | null;
  kl: number | null;
  gradNorm: number | null;
}

/** The part of a gradient or LoRA run's config the update step reads. */
export type UpdateConfig = Pick<GradientConfig, 'groupSize' | 'numIterations' | 'loss' | 'optimizer' | 'rewards' | 'temperature' | 'topK' | 'topP' | 'minP'>;

/**
 * The run's trainer over `engine`; a resumed run continues the adaptive entropy of its last
 * committed update, as the uninterrupted run would have.
 */
export function runTrainer<E extends TrainingEngine<PromptInput, unknown>>(engine: E, config: UpdateConfig, last: Pick<StepRecord<GradientStepPayload | LoraStepPayload>, 'payload'> | undefined): GrpoTrainer<E> {
  const trainer = new GrpoTrainer(engine, config.optimizer, grpoConfigOf(config), {
    temperature: config.temperature,
    ...(config.loss.maskTruncatedCompletions !== undefined ? { maskTruncatedCompletions: config.loss.maskTruncatedCompletions } : {}),
    ...(config.loss.adaptiveEntropy ? { adaptiveEntropy: config.loss.adaptiveEntropy } : {}),
    advantages: { weights: config.rewards.map((r) => r.weight), scaleRewards: config.loss.scaleRewards },
  });
  const control = last?.payload.training.at(-1)?.adaptiveEntropy;
  if (control && config.loss.adaptiveEntropy) trainer.restoreAdaptiveEntropy(control);
  return trainer;
}

/**
 * The step's updates on its groups with the driver's advantages (the old log-probs are the
 * rollouts' own; with a sampling filter the trainer corrects for it, TRL's default), one `train`
 * event each; then, stopped or not, the batch's kept states are freed.
 */
export async function trainOnStep<E extends TrainingEngine<PromptInput, unknown>>(
  trainer: GrpoTrainer<E>,
  config: UpdateConfig,
  ctx: Reporter & { plan: StepPlan; signal: AbortSignal },
  items: readonly ItemResult[],
  advantages: AdvantageResult,
): Promise<TrainStepMetrics[]> {
  const { plan, signal } = ctx;
  const training: TrainStepMetrics[] = [];
  // A step whose every group was flat (dynamic sampling left them all out) has nothing to update on.
  if (items.length > 0) {
    const groups = items.map((r) => ({ completions: r.rollouts, rewards: r.rollouts.map((x) => x.rewards) }));
    const batch = groupRolloutBatch(groups);
    const prompts = items.map((r) => r.prompt);
    // How the rollouts were sampled: with a filter, the trainer corrects for it (TRL's default).
    const sampling = { sampling: { temperature: config.temperature, topK: config.topK, topP: config.topP, minP: config.minP }, ...rolloutSampling(groups) };
    try {
      for (let iteration = 1; iteration <= config.numIterations; iteration++) {
        throwIfAborted(signal);
        const { metrics } = await trainer.trainStep(batch, prompts, { signal, advantages, ...sampling });
        training.push(metrics);
        await ctx.emit({ type: 'train', step: plan.step, epoch: plan.epoch, iteration, iterations: config.numIterations, metrics });
      }
    } finally {
      // Stopped or not, the batch's kept states go: an aborted run's trainer is handed back usable.
      trainer.releaseStates();
    }
  }
  throwIfAborted(signal);
  return training;
}

/** Rewards of an epoch's steps and the last update's loss, KL and gradient norm. */
export function gradientEpochStats(epoch: number, steps: readonly StepRecord<GradientStepPayload | LoraStepPayload>[]): GradientEpochStats {
  const stats = stepStats(steps.flatMap((s) => s.items));
  const last = steps.at(-1)?.payload.training.at(-1);
  return {
    epoch,
    steps: steps.length,
    groups: stats.groups,
    zeroSpreadGroups: stats.zeroSpreadGroups,
    rollouts: stats.rollouts,
    meanReward: stats.meanReward,
    stdReward: stats.stdReward,
    loss: last?.loss ?? null,
    kl: last?.kl ?? null,
    gradNorm: last?.gradNorm ?? null,
  };
}
