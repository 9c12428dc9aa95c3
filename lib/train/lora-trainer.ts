/**
 * GRPO updates of a full-depth LoRA adapter from advantages already computed (prompts given as
 * token ids), on the LoRA engine (lora-engine.ts):
 *
 *   engine forward (every completion, each group's prompt once) -> logps
 *   grpoLoss(logps, old, ref, advantages) -> loss, d loss / d logps   (every loss type and option)
 *   engine backward -> dA, dB;  clip_grad_norm_'s factor;  engine step (AdamW)
 *
 * `GrpoTrainer` (trainer.ts) is the same step from rewards and sampled rollouts; this one is for
 * callers that hold their own advantages and log-probs.
 */
import { InvalidInputError } from '../errors.js';
import { clipFactor, resolveOptimizer, type OptimizerOptions, type ResolvedOptimizer } from '../grad/optimizer.js';
import type { LoraAdapter } from '../lora/adapter.js';
import type { LoraForwardOptions } from '../lora/model.js';
import type { LoraOptimizerState } from '../lora/optimizer.js';
import type { DecoderWeights } from '../lora/weights.js';
import { grpoLoss, type GrpoLossConfig, type GrpoLossMetrics } from '../math/loss.js';
import { loraEngine, type LoraAdapterEngine } from './lora-engine.js';

/** One prompt's completions with their advantages (and the sampler's and reference log-probs). */
export interface LoraGroup {
  promptIds: readonly number[];
  completions: ReadonlyArray<readonly number[]>;
  advantages: readonly number[];
  /** Log-probs under the policy that sampled; default: the current ones (on-policy, ratio 1). */
  oldLogps?: ReadonlyArray<readonly number[]>;
  /** Log-probs under the reference model; needed when loss.beta is not 0. */
  refLogps?: ReadonlyArray<readonly number[]>;
}

export interface LoraTrainerOptions {
  optimizer?: OptimizerOptions;
  loss?: GrpoLossConfig;
  /** Sampling temperature (the log-probs are taken under it); default 1. */
  temperature?: number;
  precision?: LoraForwardOptions['precision'];
  /** Default true. */
  recompute?: boolean;
  /** Optimizer state to resume from. */
  state?: LoraOptimizerState;
}

export interface LoraStepResult {
  loss: number;
  metrics: GrpoLossMetrics & { gradNorm: number; clip: number; tokens: number };
  /** Per completion (groups flattened in order), the log-probs before the update. */
  logps: number[][];
}

export class LoraTrainer {
  readonly engine: LoraAdapterEngine<readonly number[]>;
  readonly optimizer: ResolvedOptimizer;

  constructor(
    readonly weights: DecoderWeights,
    readonly adapter: LoraAdapter,
    private readonly options: LoraTrainerOptions = {},
  ) {
    this.engine = loraEngine({ weights, adapter, promptIds: (ids: readonly number[]) => ids }, { precision: options.precision, recompute: options.recompute ?? true, state: options.state });
    this.optimizer = resolveOptimizer(options.optimizer);
  }

  /** AdamW's live state (what a checkpoint stores to resume exactly). */
  get state(): LoraOptimizerState {
    return this.engine.optimizerState;
  }

  async step(groups: readonly LoraGroup[]): Promise<LoraStepResult> {
    if (!Array.isArray(groups) || groups.length === 0) throw new InvalidInputError('groups', 'must be a non-empty array of { promptIds, completions, advantages }.');
    const advantages: number[] = [];
    const oldRows: Array<readonly number[] | undefined> = [];
    const refRows: Array<readonly number[] | undefined> = [];
    for (const [g, group] of groups.entries()) {
      if (group.advantages.length !== group.completions.length) throw new InvalidInputError(`groups[${g}].advantages`, `has ${group.advantages.length} entries for ${group.completions.length} completions.`);
      for (const [c, completion] of group.completions.entries()) {
        if (completion.length === 0) throw new InvalidInputError(`groups[${g}].completions[${c}]`, 'is empty; drop empty completions before training.');
        advantages.push(group.advantages[c]);
        oldRows.push(group.oldLogps?.[c]);
        refRows.push(group.refLogps?.[c]);
      }
    }
    const lengths = groups.flatMap((g) => g.completions.map((c: readonly number[]) => c.length));
    const stats = await this.engine.forward(
      groups.map((g) => ({ prompt: g.promptIds, completions: g.completions })),
      { temperature: this.options.temperature ?? 1, reference: false },
    );
    const starts = lengths.map((_, i) => lengths.slice(0, i).reduce((a, b) => a + b, 0));
    const logps = lengths.map((n, i) => Array.from(stats.logps.subarray(starts[i], starts[i] + n)));
    const width = Math.max(...lengths);
    const pad = (row: readonly number[]) => [...row, ...new Array<number>(width - row.length).fill(0)];
    const hasOld = oldRows.every((r) => r !== undefined);
    const hasRef = refRows.every((r) => r !== undefined);
    let result: ReturnType<typeof grpoLoss>;
    try {
      result = grpoLoss(
        {
          logps: logps.map(pad),
          ...(hasOld ? { oldLogps: oldRows.map((r) => pad(r!)) } : {}),
          ...(hasRef ? { refLogps: refRows.map((r) => pad(r!)) } : {}),
          advantages,
          mask: logps.map((row) => pad(row.map(() => 1))),
        },
        this.options.loss,
      );
    } catch (error) {
      this.engine.release();
      throw error;
    }
    const dLogp = new Float64Array(stats.logps.length);
    lengths.forEach((n, i) => {
      for (let t = 0; t < n; t++) dLogp[starts[i] + t] = result.grad[i][t];
    });
    const gradNorm = await this.engine.backward(dLogp, new Float64Array(dLogp.length));
    if (!Number.isFinite(gradNorm)) throw new InvalidInputError('grad', 'is not finite; the update was skipped and the adapter is unchanged.');
    const clip = clipFactor(gradNorm, this.optimizer.maxGradNorm);
    await this.engine.step(this.optimizer, clip);
    return { loss: result.loss, metrics: { ...result.metrics, gradNorm, clip, tokens: dLogp.length }, logps };
  }
}
