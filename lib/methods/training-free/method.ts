/**
 * Training-Free GRPO (arXiv 2510.08191) as a method of the driver (lib/run/driver.ts). Per step:
 * the driver rolls out a group per item with the current library in the prompt, rewards it and
 * computes advantages; this method lets the critic summarise, critique and propose operations per
 * group, merges the batch's operations, applies them, and the step is committed with a library
 * snapshot. `mode: 'exemplars'` keeps the groups' best outputs as few-shot examples instead.
 *
 * `trainingFreeGrpo` starts a run, `resumeTrainingFreeGrpo(runId)` continues one from its first
 * unfinished item: a run killed mid-step and resumed ends with the same library, byte for byte, as
 * an uninterrupted run given the same model outputs.
 */
import { normalizeExperienceLibrary } from '../../experience/normalize.js';
import { estimateTokens, formatExemplar, formatLesson } from '../../experience/render.js';
import type { ExperienceLibrary } from '../../experience/types.js';
import type { Policy } from '../../core/policy.js';
import type { Store } from '../../store/store.js';
import { TRAINING_FREE_RECORD, type TrainingFreeConfig } from './record.js';
import type { DatasetItem } from '../../core/dataset.js';
import { resumeRun, startNewRun } from '../../run/driver.js';
import type { Method, NewRun } from '../../run/method.js';
import type { Run } from '../../run/run.js';
import type { TrainingFreeEvent } from './events.js';
import { checkPromptsFit } from './context.js';
import { critiqueItem, prepareItem } from './item.js';
import { resolveConfig, validateTrainingFreeHandles, type TrainingFreeGrpoOptions, type TrainingFreeHandles } from './options.js';
import { epochStats } from './stats.js';
import { finishStep } from './step.js';

export interface TrainingFreeResult {
  runId: string;
  status: 'completed' | 'aborted';
  library: ExperienceLibrary;
  epochsCompleted: number;
  stepsCompleted: number;
  /** Items finished over the whole run (each epoch counts every item again). */
  itemsProcessed: number;
  warnings: number;
}

/**
 * A run in progress: iterate it for events (once), or await `result()` to run it to the end (an
 * aborted run resolves with status `aborted`, a failed one rejects).
 */
export type TrainingFreeRun = Run<TrainingFreeEvent, TrainingFreeResult>;

export interface ResumeOptions extends TrainingFreeHandles {
  /** The store that holds the run. */
  store: Store;
}

export const trainingFreeMethod: Method<{ kind: 'training-free'; handles: TrainingFreeHandles; result: TrainingFreeResult; options: TrainingFreeGrpoOptions }> = {
  kind: 'training-free',
  record: TRAINING_FREE_RECORD,
  create: createTrainingFreeRun,
  validateHandles: validateTrainingFreeHandles,

  async open({ run, handles, last }) {
    const { config } = run;
    // The library as the last committed step left it; a step's own result is taken once committed.
    let library = last?.payload.library ?? run.initialLibrary;
    const critic = { critic: handles.critic ?? handles.policy, config };
    const tokens = tokenCounter(handles.countTokens, handles.policy);
    const prepare = async (item: DatasetItem) => {
      await tokens.prepare(library);
      return prepareItem(config, library, tokens.count, item);
    };
    return {
      concurrency: config.concurrency,
      prepare: (ctx) => prepare(ctx.item),
      // Held-out items see the library as it stands, as the next step's items will.
      heldOut: { prompt: async (item) => (await prepare(item)).prompt },
      handleGroup: (ctx, result, rewards) => critiqueItem({ ...critic, signal: ctx.signal }, ctx, result, rewards, library),
      async finishStep(ctx, items) {
        const outcome = await finishStep({ ...critic, signal: ctx.signal }, ctx.plan, items, library, ctx.warn);
        const events = outcome.committed;
        return { ...outcome, committed: () => ((library = outcome.payload.library), events?.() ?? []) };
      },
      fields(moment) {
        if (moment.type === 'epoch-end') return { stats: epochStats(moment.epoch, moment.steps, library), library };
        if (moment.type === 'run-end') return { library, warnings: moment.tally.warnings };
        return { library };
      },
      result: async ({ runId, status, epochsCompleted, stepsCompleted, itemsProcessed, warnings }) => ({ runId, status, library, epochsCompleted, stepsCompleted, itemsProcessed, warnings }),
    };
  },
};

/** A new run: its stored config and starting library, and the check that its prompts fit the policy's context. */
function createTrainingFreeRun(options: TrainingFreeGrpoOptions): NewRun<TrainingFreeConfig> {
  const config = resolveConfig(options);
  return {
    config,
    initialLibrary: normalizeExperienceLibrary(options.initialExperiences, { maxLength: config.maxExperienceLength }),
    async check(dataset, stored) {
      await checkPromptsFit(stored, options.policy, dataset);
      if (stored.evaluation) await checkPromptsFit({ ...stored, maxNewTokens: stored.evaluation.maxNewTokens }, options.policy, stored.evaluation.items, 'evaluation.dataset');
    },
  };
}

/** Starts a new run. Options are validated here, synchronously; the loop starts when iterated. */
export function trainingFreeGrpo(options: TrainingFreeGrpoOptions): TrainingFreeRun {
  return startNewRun(trainingFreeMethod, options, createTrainingFreeRun(options));
}

/**
 * Continues a stored run from its first unfinished item. The configuration comes from the store;
 * pass the same policy, critic and reward functions (matched by name) as when it started.
 */
export function resumeTrainingFreeGrpo(runId: string, options: ResumeOptions): TrainingFreeRun {
  return resumeRun([trainingFreeMethod], runId, options);
}

/**
 * Counts tokens of library entries with the policy's own tokenizer where it has one (looked up
 * before each step, since `encode` is async), else with the character estimate.
 */
function tokenCounter(custom: ((text: string) => number) | undefined, policy: Policy) {
  const cache = new Map<string, number>();
  return {
    count: custom ?? ((text: string) => cache.get(text) ?? estimateTokens(text)),
    async prepare(library: ExperienceLibrary): Promise<void> {
      if (custom || !policy.encode) return;
      const texts = [...library.entries.map(formatLesson), ...library.exemplars.map(formatExemplar)];
      for (const text of texts) if (!cache.has(text)) cache.set(text, (await policy.encode(text)).length);
    },
  };
}
