/**
 * What the gradient method's two adapters differ in (head.ts: a low-rank adapter on the LM head;
 * lora.ts: LoRA on every projection of every layer): their options and stored config, the engine
 * the one update step trains, how the sampler follows the adapter, and how its state is kept and
 * handed over. Everything else (the update step, the step's payload, events, the result) is the
 * method's own (method.ts). Each adapter's runs keep their stored kind: 'gradient' or 'lora'.
 */
import type { PromptInput } from '../../core/policy.js';
import type { LoraCheckpoint } from '../../lora/format.js';
import type { EventFields, NewRun, OpenContext, StartOptions, Trains } from '../../run/method.js';
import type { LoopHandles } from '../../run/options.js';
import type { RunOf } from '../../run/run.js';
import type { PayloadOf } from '../../store/records.js';
import type { RecordKind } from '../../store/validate.js';
import type { TrainingEngine } from '../../train/engine.js';
import type { HeadAdapterCheckpoint } from '../../train/head/format.js';
import type { GrpoTrainer } from '../../train/trainer.js';

/** What a store keeps after each step of a run that trains an adapter: the head's (gradient) or every layer's (lora). */
export type AdapterCheckpoint = HeadAdapterCheckpoint | LoraCheckpoint;

/** Whether a checkpoint is a full-depth LoRA adapter's (else the head adapter's). */
export function isLoraCheckpoint(checkpoint: AdapterCheckpoint): checkpoint is LoraCheckpoint {
  return checkpoint.adapter.target === 'decoder';
}

export interface GradientAdapter<K extends 'gradient' | 'lora', H extends LoopHandles, O extends StartOptions<H>, E extends TrainingEngine<PromptInput, unknown>, F, I> {
  readonly kind: K;
  readonly record: RecordKind;
  readonly trains: Trains;
  /** A new run's stored config from the start options, and the trained adapter it starts from, if given. */
  create(options: O): NewRun<RunOf<K>['config'], I>;
  /** Checks a resume's handles. */
  validateHandles(handles: H): void;
  /**
   * The run's trainer (`train` makes it over the adapter's engine): a resumed run's from its
   * checkpoint, a new one's from `ctx.initial` or a fresh adapter. When it returns, the policy
   * samples from the run's own model; `follow`, after each step's updates, makes it sample from
   * the updated one and returns what that adds to the step's payload and `step-end`.
   */
  open(ctx: OpenContext<RunOf<K>, H, PayloadOf<K>, I>, train: (engine: E) => GrpoTrainer<E>): Promise<{ trainer: GrpoTrainer<E>; follow?(): Promise<EventFields> }>;
  /** The adapter and optimizer state committed with the step. */
  checkpoint(trainer: GrpoTrainer<E>, step: number, model: string): Promise<AdapterCheckpoint>;
  /** The adapter as a run's result hands it over (its file). */
  file(trainer: GrpoTrainer<E>, handles: H): Promise<F>;
}
