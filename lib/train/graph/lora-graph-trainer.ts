/**
 * One GRPO update of a LoRA adapter on the graph engine: the forward graph gives every
 * completion's log-probs, grpoLoss (every loss type and option) gives d loss / d logp, the
 * backward graph gives d loss / d (A, B), and AdamW with global clipping (in TypeScript: a few
 * thousand numbers) updates the adapter the next forward reads as its inputs.
 */
import { InvalidInputError } from '../../errors.js';
import type { OptimizerOptions } from '../../grad/optimizer.js';
import type { LoraAdapter } from '../../lora/adapter.js';
import { LoraOptimizer, type LoraOptimizerState } from '../../lora/optimizer.js';
import type { LoraGroup, LoraStepResult } from '../../lora/trainer.js';
import { grpoLoss, type GrpoLossConfig } from '../../math/loss.js';
import type { LoraGraphEngine } from './lora-graph-engine.js';

export interface LoraGraphTrainerOptions {
  optimizer?: OptimizerOptions;
  loss?: GrpoLossConfig;
  /** Sampling temperature (the log-probs are taken under it); default 1. */
  temperature?: number;
  /** Optimizer state to resume from. */
  state?: LoraOptimizerState;
}

export class LoraGraphTrainer {
  readonly optimizer: LoraOptimizer;

  constructor(
    readonly engine: LoraGraphEngine,
    readonly adapter: LoraAdapter,
    private readonly options: LoraGraphTrainerOptions = {},
  ) {
    this.optimizer = new LoraOptimizer(adapter, options.optimizer, options.state);
  }

  async step(groups: readonly LoraGroup[]): Promise<LoraStepResult> {
    if (!Array.isArray(groups) || groups.length === 0) throw new InvalidInputError('groups', 'must be a non-empty array of { promptIds, completions, advantages }.');
    const advantages: number[] = [];
    const oldRows: Array<readonly number[] | undefined> = [];
    const refRows: Array<readonly number[] | undefined> = [];
    for (const [g, group] of groups.entries()) {
      if (group.advantages.length !== group.completions.length) throw new InvalidInputError(`groups[${g}].advantages`, `has ${group.advantages.length} entries for ${group.completions.length} completions.`);
      for (let c = 0; c < group.completions.length; c++) {
        advantages.push(group.advantages[c]);
        oldRows.push(group.oldLogps?.[c]);
        refRows.push(group.refLogps?.[c]);
      }
    }
    const pass = await this.engine.forward(this.adapter, groups, this.options.temperature ?? 1);
    const logps = pass.logprobs;
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
    const grad = await pass.backward(logps.map((row, i) => result.grad[i].slice(0, row.length)));
    const { gradNorm, clip } = this.optimizer.update(this.adapter, grad);
    const tokens = logps.reduce((n, row) => n + row.length, 0);
    return { loss: result.loss, metrics: { ...result.metrics, gradNorm, clip, tokens }, logps };
  }
}
