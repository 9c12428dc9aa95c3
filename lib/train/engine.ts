/**
 * What an update step needs of the model being trained, whatever holds its parameters and runs its
 * arithmetic (the head adapter's graphs, full-depth LoRA's, the whole decoder's for pretraining,
 * each on onnxruntime on the policy's backend):
 *
 *   forward:   log p(y) (and the entropy H) of every completion token under the current parameters
 *   backward:  from d loss / d log p(y) and d loss / d H per token to the trainable parameters' gradient
 *              (or both at once, part by part: forwardBackward, where the engine has it)
 *   step:      gradient-norm clipping by a given factor, then one AdamW update
 *   state:     the parameters with the optimizer's moments, to store and to load again
 *
 * The loss is not the engine's: `GrpoTrainer` (trainer.ts) turns the forward's numbers into the
 * loss and the per-token sensitivities, and decides the clipping factor from the backward's norm.
 * Numbers cross as plain typed arrays in one flat token order (`slot`): group by group, completion
 * by completion, token by token, so an engine on any backend fits without framework types.
 */
import type { ResolvedOptimizer } from './optimizer.js';

/** One prompt and its completions' token ids (each up to the last token the loss counts). */
export interface EngineGroup<Prompt> {
  prompt: Prompt;
  completions: ReadonlyArray<readonly number[]>;
}

/**
 * A batch of groups. Engines may keep work that does not depend on the trainable parameters (the
 * frozen model's states, the reference log-probs) for as long as they are handed the same array
 * object, so another optimisation iteration on a batch (TRL's num_iterations) does not redo it.
 */
export type EngineBatch<Prompt> = ReadonlyArray<EngineGroup<Prompt>>;

/** Per slot (one completion token), in the batch's flat order. */
export interface EngineStats {
  /** log p(y) of softmax(z / T) under the current parameters. */
  logps: Float64Array;
  /** The entropy of that distribution. */
  entropies: Float64Array;
  /** log p(y) with the trainable parameters off (the base model): present when asked for. */
  refLogps?: Float64Array;
}

export interface ForwardOptions {
  /** The temperature the log-probs and entropies are taken under (the rollouts' sampling one). */
  temperature: number;
  /** Also return `refLogps`; engines compute them once per batch. */
  reference: boolean;
  /**
   * false: the backward's d loss / d H will be all 0 (the loss has no entropy term), so an engine
   * may leave out the work for it; a non-zero one must still be taken. Default true.
   */
  entropyGradient?: boolean;
  signal?: AbortSignal;
}

/** d loss / d log p(y) and d loss / d H for the slots `start` to `end` of a batch. */
export interface Sensitivities {
  dLogp: Float64Array;
  dEntropy: Float64Array;
}

/**
 * The loss's sensitivities for one part of a batch (whole completions: slots `start` to `end`),
 * from that part's numbers (`part`'s arrays hold its slots only, slot `start` first).
 */
export type PartSensitivities = (part: EngineStats, start: number, end: number) => Sensitivities;

/** What `forwardBackward` resolves with: every slot's numbers, and the norm of the gradient it set. */
export interface ForwardBackwardResult {
  stats: EngineStats;
  gradNorm: number;
}

export interface TrainingEngine<Prompt, State> {
  /** Where the arithmetic runs, in the engine's words ('host', 'gpu', 'onnxruntime'...). */
  readonly backend: string;
  /** Optimizer updates applied so far (what `load` restores). */
  readonly updates: number;
  /**
   * Runs the batch under the current parameters and keeps what `backward` needs (until `backward`,
   * the next `forward` or `release`). Resolves with every slot's numbers.
   */
  forward(batch: EngineBatch<Prompt>, options: ForwardOptions): Promise<EngineStats>;
  /**
   * From the last forward's d loss / d log p(y) and d loss / d H per slot, sets the trainable
   * parameters' gradient (replacing any earlier one) and resolves with its global L2 norm.
   */
  backward(dLogp: Float64Array, dEntropy: Float64Array): Promise<number>;
  /**
   * Optional: the forward and the backward in one pass, part by part (a LoRA engine's
   * micro-batches): after each part's forward, `sensitivities` gives its slots' d loss / d log p(y)
   * and d H, and its backward runs at once, so what a part's backward reads is held only that long
   * and nothing is recomputed. Sets the gradient as `backward` does. For a loss whose gradient at
   * a completion depends on that completion's numbers alone (and the batch's constants), the same
   * gradient as `forward` then `backward`.
   */
  forwardBackward?(batch: EngineBatch<Prompt>, options: ForwardOptions, sensitivities: PartSensitivities): Promise<ForwardBackwardResult>;
  /** Multiplies the gradient by `clip` (the clip_grad_norm_ factor) and applies one AdamW update. */
  step(optimizer: ResolvedOptimizer, clip: number): Promise<void>;
  /** Drops the kept per-batch work (the next forward starts the batch afresh); parameters stay. */
  release(): void;
  /** The parameters and the optimizer's moments, as host copies a store can encode. */
  read(): Promise<State>;
  /** Continues from a state `read` returned (of the same shape); throws InvalidInputError otherwise. */
  load(state: State): void;
  /** Frees what the engine holds outside the JS heap; after it, the engine is not used again. */
  dispose(): void;
}
