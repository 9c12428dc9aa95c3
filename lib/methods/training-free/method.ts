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
import { InvalidInputError } from '../../errors.js';
import { normalizeExperienceLibrary } from '../../experience/normalize.js';
import { estimateTokens, formatExemplar, formatLesson } from '../../experience/render.js';
import type { ExperienceLibrary } from '../../experience/types.js';
import type { Policy } from '../../core/policy.js';
import { MemoryStore } from '../../store/memory.js';
import type { TrainingFreeConfig } from './record.js';
import type { Store } from '../../store/types.js';
import { TRAINING_FREE_RECORD } from './record.js';
import { validateDataset } from '../../core/dataset.js';
import { resumeRun, startRun } from '../../run/driver.js';
import type { Method } from '../../run/method.js';
import { checkRunId } from '../../run/options.js';
import { newRunRecord, type Run } from '../../run/run.js';
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

/** What a drive of a training-free run keeps: the library as it stands, the critic, the token counter. */
interface TrainingFreeState {
  config: TrainingFreeConfig;
  library: ExperienceLibrary;
  critic: Policy;
  tokens: ReturnType<typeof tokenCounter>;
}

export const trainingFreeMethod: Method<'training-free', TrainingFreeState, TrainingFreeHandles, TrainingFreeResult> = {
  kind: 'training-free',
  resumeWith: 'resumeTrainingFreeGrpo',
  record: TRAINING_FREE_RECORD,
  start: (options) => trainingFreeGrpo(options as TrainingFreeGrpoOptions),
  resume: (runId, handles) => resumeTrainingFreeGrpo(runId, handles),
  validateHandles: validateTrainingFreeHandles,
  advantages: () => ({ scaleRewards: 'group' }),
  concurrency: (config) => config.concurrency,

  async preflight({ config }, dataset, { policy }) {
    await checkPromptsFit(config, policy, dataset);
    if (config.evaluation) await checkPromptsFit({ ...config, maxNewTokens: config.evaluation.maxNewTokens }, policy, config.evaluation.items, 'evaluation.dataset');
  },
  async open({ run, handles, last }) {
    return {
      config: run.config,
      library: last?.payload.library ?? run.initialLibrary,
      critic: handles.critic ?? handles.policy,
      tokens: tokenCounter(handles.countTokens, handles.policy),
    };
  },
  runStart: (state) => ({ library: state.library }),
  async stepStart(state) {
    await state.tokens.prepare(state.library);
    return { library: state.library };
  },
  prepare: async (state, ctx) => prepareItem(state.config, state.library, state.tokens.count, ctx.item),
  // Held-out items see the library as it stands, as the next step's items will.
  async evaluationPrompt(state, item) {
    await state.tokens.prepare(state.library);
    return prepareItem(state.config, state.library, state.tokens.count, item).prompt;
  },
  handleGroup: (state, ctx, result, rewards) => critiqueItem({ critic: state.critic, config: state.config, signal: ctx.signal }, ctx, result, rewards, state.library),
  finishStep: (state, ctx, items) => finishStep({ critic: state.critic, config: state.config, signal: ctx.signal }, ctx.plan, items, state.library, ctx.warn),
  committed(state, record) {
    state.library = record.payload.library;
  },
  epochEnd: (state, epoch, steps) => ({ stats: epochStats(epoch, steps, state.library), library: state.library }),
  runEnd: (state, tally) => ({ library: state.library, warnings: tally.warnings }),
  result: async (state, { runId, status, epochsCompleted, stepsCompleted, itemsProcessed, warnings }) => ({
    runId,
    status,
    library: state.library,
    epochsCompleted,
    stepsCompleted,
    itemsProcessed,
    warnings,
  }),
};

/** Starts a new run. Options are validated here, synchronously; the loop starts when iterated. */
export function trainingFreeGrpo(options: TrainingFreeGrpoOptions): TrainingFreeRun {
  if (!options || typeof options !== 'object') throw new InvalidInputError('options', 'expected an options object.');
  const config = resolveConfig(options);
  const dataset = validateDataset(options.dataset);
  const initialLibrary = normalizeExperienceLibrary(options.initialExperiences, { maxLength: config.maxExperienceLength });
  const runId = options.runId !== undefined ? checkRunId(options.runId) : crypto.randomUUID();
  const run = newRunRecord('training-free', runId, config, dataset.length, initialLibrary);
  return startRun(trainingFreeMethod, run, dataset, options, options.store ?? new MemoryStore());
}

/**
 * Continues a stored run from its first unfinished item. The configuration comes from the store;
 * pass the same policy, critic and reward functions (matched by name) as when it started.
 */
export function resumeTrainingFreeGrpo(runId: string, options: ResumeOptions): TrainingFreeRun {
  return resumeRun(trainingFreeMethod, runId, options);
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
