/**
 * What the playground shows of a run that depends on its method: one entry per run kind, looked up
 * by `run.kind`, so the panels and tables ask the run's view instead of branching on its kind. (A
 * step's payload is read the same way, in step-payload.ts.)
 */
import type { RunRecord } from '../../lib/index.js';
import { methodOf, runMethod } from '../../lib/method.js';
import type { GrpoLossConfig } from '../../lib/math.js';

/** The settings rows only some methods have, for the comparison table. */
export const KIND_SETTINGS = ['Learning rate', 'Adapter rank', 'Updates per step', 'Experiences per prompt'] as const;
export type KindSetting = (typeof KIND_SETTINGS)[number];

export interface KindView<R extends RunRecord = RunRecord> {
  /** The run keeps an experience library (its panel, the library charts, its prompts carry one). */
  keepsLibrary: boolean;
  /** Why the loaded model cannot score its groups again, when it cannot whatever the model. */
  unscorable?: string;
  /** A group whose completions all scored the same still teaches it something. */
  learnsFromFlatGroups: boolean;
  /** The loss the scored views draw a group's tokens with. */
  loss(run: R): GrpoLossConfig;
  /** The method's own settings, by comparison-table row. */
  settings(run: R): Partial<Record<KindSetting, string>>;
  /** What the loop does with a group once its advantages are known (one it learns from). */
  afterAdvantages(run: R | undefined, item: number): string;
}

type Views = { [K in RunRecord['kind']]: KindView<Extract<RunRecord, { kind: K }>> };

const VIEWS: Views = {
  'training-free': {
    keepsLibrary: true,
    learnsFromFlatGroups: false,
    loss: () => ({}),
    // Runs stored before retrieval existed show every experience that fits, as 0 does.
    settings: (run) => ({ 'Experiences per prompt': run.config.retrieveExperiences ? `${run.config.retrieveExperiences} (the closest)` : 'all that fit' }),
    afterAdvantages: (run, item) =>
      (run ? runMethod(run) : 'exemplars') === 'lessons'
        ? `The critic is summarising each completion of prompt #${item + 1}`
        : `Prompt #${item + 1}: keeping its best completion if it beats the group mean`,
  },
  gradient: {
    keepsLibrary: false,
    learnsFromFlatGroups: false,
    loss: (run) => ({ lossType: run.config.loss.lossType }),
    settings: (run) => ({ 'Learning rate': String(run.config.optimizer.lr), 'Adapter rank': String(run.config.adapter.rank), 'Updates per step': String(run.config.numIterations) }),
    afterAdvantages: (_run, item) => `Prompt #${item + 1}: advantages ready; the adapter is updated once the step’s groups are in`,
  },
  lora: {
    keepsLibrary: false,
    learnsFromFlatGroups: false,
    loss: (run) => ({ lossType: run.config.loss.lossType }),
    settings: (run) => ({ 'Learning rate': String(run.config.optimizer.lr), 'Adapter rank': String(run.config.lora.r), 'Updates per step': String(run.config.numIterations) }),
    afterAdvantages: (_run, item) => `Prompt #${item + 1}: advantages ready; LoRA on every layer is updated once the step’s groups are in, and the next step samples with its A and B as inputs of the model’s graph`,
  },
  router: {
    keepsLibrary: false,
    unscorable: 'A router group is written from several prompt variants, so it has no one prompt to score it with.',
    // The router learns across the step's groups of a query class, so a flat group still counts.
    learnsFromFlatGroups: true,
    loss: () => ({}),
    settings: (run) => ({ 'Learning rate': String(run.config.router.learningRate) }),
    afterAdvantages: (_run, item) => `Prompt #${item + 1}: rewards handed to the router; it updates once the step’s groups are in`,
  },
};

/** The view of `run`'s kind; with no run yet, the training-free one (the playground's default method). */
export function kindView(run: RunRecord | undefined): KindView {
  return (VIEWS[run?.kind ?? 'training-free'] ?? VIEWS['training-free']) as KindView;
}

/** Whether `run`'s method trains an adapter, checkpointed with every step (its panel, its norm over the steps): the library's `trains`. */
export function trainsAdapter(run: RunRecord): boolean {
  return methodOf(run.kind)?.trains !== undefined;
}
