/**
 * What the gradient method's two adapters differ in once a run is open (head.ts: a low-rank adapter
 * on the LM head; lora.ts: LoRA on every projection of every layer): what trains, how the step's
 * payload is made, how the adapter is checkpointed and handed over. Their options and stored
 * configs are theirs too; each adapter's runs keep their stored kind, 'gradient' or 'lora'.
 */
import type { PromptInput } from '../../core/policy.js';
import type { LoraCheckpoint } from '../../lora/format.js';
import type { TrainingEngine } from '../../train/engine.js';
import type { HeadAdapterCheckpoint } from '../../train/head/format.js';
import type { TrainStepMetrics } from '../../train/metrics.js';
import type { GrpoTrainer } from '../../train/trainer.js';
import type { GradientStepPayload, LoraStepPayload } from './record.js';

/** What a store keeps after each step of a run that trains an adapter: the head's (gradient) or every layer's (lora). */
export type AdapterCheckpoint = HeadAdapterCheckpoint | LoraCheckpoint;

/** Whether a checkpoint is a full-depth LoRA adapter's (else the head adapter's). */
export function isLoraCheckpoint(checkpoint: AdapterCheckpoint): checkpoint is LoraCheckpoint {
  return checkpoint.adapter.target === 'decoder';
}

/**
 * An adapter as a drive of the gradient method holds it once its run is open: the trainer over
 * the adapter's engine (a resumed run's from its checkpoint, a new one's from the given adapter or
 * a fresh one), and what the head adapter and LoRA do differently with it. Everything else (the
 * update step, events, the result) is the method's (method.ts).
 */
export interface OpenAdapter<P extends GradientStepPayload | LoraStepPayload, E extends TrainingEngine<PromptInput, unknown>, F> {
  readonly trainer: GrpoTrainer<E>;
  /** Extra fields of the run-start event (LoRA: how the run holds its memory, and why). */
  readonly startFields?: Record<string, unknown>;
  /** Called before a step's updates, once its groups are sampled (LoRA taking turns frees the sampler's session here). */
  beforeUpdate?(): Promise<void>;
  /** The step's payload once its updates are done (LoRA's sampler follows the updated adapter first). */
  payload(training: TrainStepMetrics[]): Promise<P>;
  /** The adapter and optimizer state committed with the step. */
  checkpoint(step: number): Promise<AdapterCheckpoint>;
  /** The adapter as a run's result hands it over (its file). */
  file(): Promise<F>;
}
