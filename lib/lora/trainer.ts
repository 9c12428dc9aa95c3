/**
 * One GRPO update of a full-depth LoRA adapter on the CPU:
 *
 *   forward every completion (prompt + completion) -> logps
 *   grpoLoss(logps, old, ref, advantages) -> loss, d loss / d logps   (every loss type and option)
 *   backward each pass from its row of d loss / d logps -> dA, dB;  AdamW with global clipping
 *
 * Each group's prompt runs once (loraGroupForward). The passes keep only each layer's input by
 * default (`recompute`), so a whole batch waits for the loss at little memory; the backward
 * rebuilds one layer's activations at a time.
 */
import { InvalidInputError } from '../errors.js';
import type { OptimizerOptions } from '../grad/optimizer.js';
import { grpoLoss, type GrpoLossConfig, type GrpoLossMetrics } from '../math/loss.js';
import { zerosLike, type LoraAdapter } from './adapter.js';
import { loraGroupForward, type LoraForwardOptions } from './model.js';
import { LoraOptimizer, type LoraOptimizerState } from './optimizer.js';
import type { DecoderWeights } from './weights.js';

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
  readonly optimizer: LoraOptimizer;
  private readonly forward: LoraForwardOptions;

  constructor(
    readonly weights: DecoderWeights,
    readonly adapter: LoraAdapter,
    private readonly options: LoraTrainerOptions = {},
  ) {
    this.optimizer = new LoraOptimizer(adapter, options.optimizer, options.state);
    this.forward = { temperature: options.temperature, precision: options.precision, recompute: options.recompute ?? true };
  }

  step(groups: readonly LoraGroup[]): LoraStepResult {
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
    const passes = groups.map((group) => loraGroupForward(this.weights, this.adapter, group, this.forward));
    const logps = passes.flatMap((p) => p.logprobs);
    const width = Math.max(...logps.map((row) => row.length));
    const pad = (row: readonly number[]) => [...row, ...new Array<number>(width - row.length).fill(0)];
    const hasOld = oldRows.every((r) => r !== undefined);
    const hasRef = refRows.every((r) => r !== undefined);
    const result = grpoLoss(
      {
        logps: logps.map(pad),
        ...(hasOld ? { oldLogps: oldRows.map((r) => pad(r!)) } : {}),
        ...(hasRef ? { refLogps: refRows.map((r) => pad(r!)) } : {}),
        advantages,
        mask: logps.map((row) => pad(row.map(() => 1))),
      },
      this.options.loss,
    );
    const grad = zerosLike(this.adapter);
    let row = 0;
    for (const pass of passes) {
      pass.backward(pass.logprobs.map((lp) => result.grad[row++].slice(0, lp.length)), grad);
    }
    const { gradNorm, clip } = this.optimizer.update(this.adapter, grad);
    const tokens = logps.reduce((n, row) => n + row.length, 0);
    return { loss: result.loss, metrics: { ...result.metrics, gradNorm, clip, tokens }, logps };
  }
}
