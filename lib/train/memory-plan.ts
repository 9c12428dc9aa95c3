/**
 * How a LoRA run holds its memory under a budget of bytes (a run's `memoryBudget`, all it may
 * take): the sampler's session and the step together when both fit, in turns (`takeTurns`) when
 * only that fits, and when neither does, a refusal before any step that names what would fit.
 * The numbers are estimateStepMemory's `together` and `inTurns`, at the largest micro-batches that
 * fit, the backward recomputing; whatever the budget leaves over keeps activations for it.
 */
import { OutOfMemoryError } from '../errors.js';
import type { DecoderShape } from '../weights/decoder.js';
import { DEFAULT_ACTIVATION_BUDGET, DEFAULT_MICRO_BATCH_TOKENS, estimateStepMemory, type StepMemorySettings } from './memory.js';

/** Both in memory at once (a LoRA run's default), or the sampler and the engine holding the weights in turns. */
export type MemoryMode = 'together' | 'turns';

/** Which way a run holds its memory and why (a LoRA run's `run-start` event says it). */
export interface MemoryPlan {
  mode: MemoryMode;
  /** One sentence: the mode, and the estimate and budget it was chosen by. */
  reason: string;
  /** The run's memoryBudget in bytes, with estimateStepMemory's `together` and `inTurns` at the plan's micro-batches (absent without a budget). */
  budget?: number;
  together?: number;
  inTurns?: number;
  /** What the engine is built with (absent without a budget: its defaults). */
  activationBudget?: number;
  microBatchTokens?: number;
}

/** A step's settings as a run knows them (the micro-batches and the activations kept are the plan's to choose). */
export type PlanSettings = Omit<StepMemorySettings, 'microBatchTokens' | 'activationBudget'>;

/** The smallest micro-batch tried (planMemory's floor too). */
const MIN_MICRO_BATCH_TOKENS = 16;

const mb = (bytes: number) => `${Math.round(bytes / 1e6)} MB`;

/** How `mode` fits at these settings: its largest micro-batches within `budget`, else its least need. */
function cheapest(shape: DecoderShape, settings: PlanSettings, mode: MemoryMode, budget: number) {
  let least: { need: number; total: number; together: number; inTurns: number; microBatchTokens: number; fits: boolean } | undefined;
  for (let tokens = DEFAULT_MICRO_BATCH_TOKENS; tokens >= MIN_MICRO_BATCH_TOKENS; tokens >>= 1) {
    const e = estimateStepMemory(shape, { ...settings, microBatchTokens: tokens, activationBudget: 0 });
    const need = mode === 'together' ? e.together : e.inTurns;
    const fit = { need, total: e.total, together: e.together, inTurns: e.inTurns, microBatchTokens: tokens, fits: need <= budget };
    if (fit.fits) return fit;
    if (!least || need < least.need) least = fit;
  }
  return least!;
}

/**
 * The plan for a run with `budget` bytes: `takeTurns` true or false fixes the mode (and is refused
 * when it does not fit), 'auto' takes together when it fits, else turns. Throws OutOfMemoryError
 * when the mode(s) allowed do not fit, saying what would.
 */
export function planRunMemory(shape: DecoderShape, settings: PlanSettings, budget: number, takeTurns: boolean | 'auto'): Required<MemoryPlan> {
  const plan = fitRunMemory(shape, settings, budget, takeTurns);
  if (!plan) throw new OutOfMemoryError(refusal(shape, settings, budget, takeTurns));
  return plan;
}

/**
 * The largest value in [least, from - 1] at which `fits` holds, by bisection: a step's need only
 * grows with its completions, tokens and prompts.
 */
export function largestFitting(from: number, least: number, fits: (value: number) => boolean): number | undefined {
  if (from - 1 < least || !fits(least)) return undefined;
  let lo = least;
  let hi = from - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** planRunMemory's plan, or undefined where it would refuse (for searching settings without building refusals). */
export function fitRunMemory(shape: DecoderShape, settings: PlanSettings, budget: number, takeTurns: boolean | 'auto'): Required<MemoryPlan> | undefined {
  const modes: MemoryMode[] = takeTurns === 'auto' ? ['together', 'turns'] : [takeTurns ? 'turns' : 'together'];
  for (const mode of modes) {
    const fit = cheapest(shape, settings, mode, budget);
    if (!fit.fits) continue;
    // Past the step as it must be, what is left keeps activations for the backward (up to the engine's default: keeping costs large steps time).
    const left = budget - (mode === 'together' ? fit.together : fit.total);
    const reason =
      mode === 'together'
        ? `The sampler and the step together need about ${mb(fit.together)} of the ${mb(budget)} memoryBudget.`
        : takeTurns === 'auto'
          ? `Taking turns: the sampler and the step together would need about ${mb(fit.together)}, more than the ${mb(budget)} memoryBudget; in turns about ${mb(fit.inTurns)}.`
          : `Taking turns (takeTurns: true): about ${mb(fit.inTurns)} of the ${mb(budget)} memoryBudget.`;
    return { mode, reason, budget, together: fit.together, inTurns: fit.inTurns, activationBudget: Math.min(left, DEFAULT_ACTIVATION_BUDGET), microBatchTokens: fit.microBatchTokens };
  }
  return undefined;
}

/** What the refusal says: the estimate against the budget, then every single change that fits (and in which mode, where 'auto' would take turns). */
function refusal(shape: DecoderShape, settings: PlanSettings, budget: number, takeTurns: boolean | 'auto'): string {
  const together = cheapest(shape, settings, 'together', budget);
  const turns = cheapest(shape, settings, 'turns', budget);
  const modes: MemoryMode[] = takeTurns === 'auto' ? ['together', 'turns'] : [takeTurns ? 'turns' : 'together'];
  const fitting = (s: PlanSettings) => modes.find((mode) => cheapest(shape, s, mode, budget).fits);
  const named = (what: string, mode: MemoryMode) => (takeTurns === 'auto' && mode === 'turns' ? `${what} taking turns` : what);
  const largest = (key: 'groupSize' | 'completionTokens' | 'prompts', from: number, least: number, what: (v: number) => string) => {
    const v = largestFitting(from, least, (value) => fitting({ ...settings, [key]: value }) !== undefined);
    return v === undefined ? undefined : named(what(v), fitting({ ...settings, [key]: v })!);
  };
  const packed = settings.dtype === 'q4' || settings.dtype === 'q4f16';
  const q4 = packed ? undefined : fitting({ ...settings, dtype: 'q4' });
  const options = [
    takeTurns === false && turns.fits ? `taking turns (takeTurns: 'auto' or true, about ${mb(turns.need)})` : undefined,
    largest('groupSize', settings.groupSize, 2, (v) => `groups of ${v}`),
    largest('completionTokens', settings.completionTokens, 1, (v) => `replies of at most ${v} tokens`),
    largest('prompts', settings.prompts ?? 1, 1, (v) => `${v} prompt${v === 1 ? '' : 's'} a step`),
    q4 ? named('a 4-bit (q4) model', q4) : undefined,
    `a memoryBudget of at least ${mb(takeTurns === false ? together.need : turns.need)}`,
  ].filter((o): o is string => o !== undefined);
  const held = takeTurns === false ? 'held together (takeTurns: false)' : takeTurns === true ? 'taking turns (takeTurns: true)' : 'even taking turns';
  return (
    `A LoRA step at these settings does not fit the ${mb(budget)} memoryBudget ${held}: about ${mb(together.need)} with the sampler beside it, ${mb(turns.need)} taking turns (estimateStepMemory). ` +
    `Nothing was trained. It fits with ${options.join(', or ')}.`
  );
}
