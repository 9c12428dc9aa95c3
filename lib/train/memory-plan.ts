/**
 * How a LoRA run holds its memory under a budget of bytes (a run's `memoryBudget`, all it may
 * take): the sampler's session and the step together when both fit, in turns (`takeTurns`) when
 * only that fits, and when neither does, a refusal before any step that names what would fit.
 * The numbers are estimateStepMemory's `together` and `inTurns` (with `turnGarbage` where the
 * runtime could collect it and the plan does not) and the runtime's own bytes where the caller
 * counts them (Node), at the largest micro-batches that fit, the backward recomputing; whatever
 * the budget leaves over keeps activations for it.
 */
import { OutOfMemoryError } from '../errors.js';
import type { DecoderShape } from '../weights/decoder.js';
import { DEFAULT_ACTIVATION_BUDGET, DEFAULT_MICRO_BATCH_TOKENS, estimateStepMemory, type StepMemoryEstimate, type StepMemorySettings } from './memory.js';

/** Both in memory at once (a LoRA run's default), or the sampler and the engine holding the weights in turns. */
export type MemoryMode = 'together' | 'turns';

/**
 * What the runtime offers beyond taking turns, each taken only when the budget needs it (cheapest
 * first), so a run with room runs as fast as without a budget.
 */
export interface MemoryLevers {
  /**
   * JavaScript's garbage can be collected at each turn (Node: collect-garbage.ts). With it the plan
   * counts, taking turns, what a turn may find uncollected (estimateStepMemory's `turnGarbage`),
   * and collects when only that fits. Without it (a page) that garbage is not counted, as before.
   */
  collectGarbage?: boolean;
  /** Bytes the runtime holds beside the run, counted into every need (Node: NODE_RUNTIME_BYTES); default 0. */
  runtimeBytes?: number;
}

/** Which way a run holds its memory and why (a LoRA run's `run-start` event says it). */
export interface MemoryPlan {
  mode: MemoryMode;
  /** One sentence: the mode and its levers, and the estimate and budget they were chosen by. */
  reason: string;
  /** Taking turns, JavaScript's garbage is collected at each turn (MemoryLevers.collectGarbage): the budget needed it. */
  collectGarbage?: boolean;
  /** The run's memoryBudget in bytes, with estimateStepMemory's `together` and `inTurns` at the plan's micro-batches (absent without a budget). */
  budget?: number;
  together?: number;
  inTurns?: number;
  /** What the plan counted beside them for the runtime itself (MemoryLevers.runtimeBytes). */
  runtime?: number;
  /** What the engine is built with (absent without a budget: its defaults). */
  activationBudget?: number;
  microBatchTokens?: number;
}

/** A step's settings as a run knows them (the micro-batches and the activations kept are the plan's to choose). */
export type PlanSettings = Omit<StepMemorySettings, 'microBatchTokens' | 'activationBudget'>;

/** The smallest micro-batch tried (planMemory's floor too). */
const MIN_MICRO_BATCH_TOKENS = 16;

const mb = (bytes: number) => `${Math.round(bytes / 1e6)} MB`;

/** One way of holding the memory: a mode, and whether it collects garbage at each turn. */
interface Rung {
  mode: MemoryMode;
  collect: boolean;
}

/** The ways `takeTurns` allows, cheapest first: together, then in turns, then in turns collecting (where the runtime can). */
function rungsOf(takeTurns: boolean | 'auto', levers: MemoryLevers): Rung[] {
  const modes: MemoryMode[] = takeTurns === 'auto' ? ['together', 'turns'] : [takeTurns ? 'turns' : 'together'];
  return modes.flatMap((mode): Rung[] => (mode === 'turns' && levers.collectGarbage ? [{ mode, collect: false }, { mode, collect: true }] : [{ mode, collect: false }]));
}

/** The garbage a turn may meet at this rung: counted where the runtime could collect it and the rung does not. */
const garbageAt = (e: StepMemoryEstimate, rung: Rung, levers: MemoryLevers) => (rung.mode === 'turns' && levers.collectGarbage && !rung.collect ? e.turnGarbage : 0);

/** How `rung` fits at these settings: its largest micro-batches within `budget`, else its least need. */
function cheapest(shape: DecoderShape, settings: PlanSettings, rung: Rung, budget: number, levers: MemoryLevers) {
  let least: { need: number; garbage: number; turnGarbage: number; total: number; together: number; inTurns: number; microBatchTokens: number; fits: boolean } | undefined;
  for (let tokens = DEFAULT_MICRO_BATCH_TOKENS; tokens >= MIN_MICRO_BATCH_TOKENS; tokens >>= 1) {
    const e = estimateStepMemory(shape, { ...settings, microBatchTokens: tokens, activationBudget: 0 });
    const garbage = garbageAt(e, rung, levers);
    const need = (rung.mode === 'together' ? e.together : e.inTurns + garbage) + (levers.runtimeBytes ?? 0);
    const fit = { need, garbage, turnGarbage: e.turnGarbage, total: e.total, together: e.together, inTurns: e.inTurns, microBatchTokens: tokens, fits: need <= budget };
    if (fit.fits) return fit;
    if (!least || need < least.need) least = fit;
  }
  return least!;
}

/**
 * The plan for a run with `budget` bytes: `takeTurns` true or false fixes the mode (and is refused
 * when it does not fit), 'auto' takes together when it fits, else turns; taking turns, the
 * runtime's `levers` are taken only when the turns do not fit without them. Throws
 * OutOfMemoryError when nothing allowed fits, saying what would.
 */
export function planRunMemory(shape: DecoderShape, settings: PlanSettings, budget: number, takeTurns: boolean | 'auto', levers: MemoryLevers = {}): Required<MemoryPlan> {
  const plan = fitRunMemory(shape, settings, budget, takeTurns, levers);
  if (!plan) throw new OutOfMemoryError(refusal(shape, settings, budget, takeTurns, levers));
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
export function fitRunMemory(shape: DecoderShape, settings: PlanSettings, budget: number, takeTurns: boolean | 'auto', levers: MemoryLevers = {}): Required<MemoryPlan> | undefined {
  for (const rung of rungsOf(takeTurns, levers)) {
    const fit = cheapest(shape, settings, rung, budget, levers);
    if (!fit.fits) continue;
    // Past the step as it must be (with the garbage it may meet and the runtime), what is left keeps activations for the backward (up to the engine's default: keeping costs large steps time).
    const runtime = levers.runtimeBytes ?? 0;
    const left = budget - runtime - (rung.mode === 'together' ? fit.together : fit.total + fit.garbage);
    const counted = runtime > 0 ? ` (${mb(runtime)} of it the runtime's own)` : '';
    const reason =
      rung.mode === 'together'
        ? `The sampler and the step together need about ${mb(fit.need)}${counted} of the ${mb(budget)} memoryBudget.`
        : rung.collect
          ? `Taking turns${takeTurns === 'auto' ? '' : ' (takeTurns: true)'} and collecting JavaScript's garbage at each turn: ${takeTurns === 'auto' ? `together about ${mb(fit.together + runtime)}, ` : ''}in turns about ${mb(fit.inTurns + fit.turnGarbage + runtime)} with what a turn leaves uncollected, more than the ${mb(budget)} memoryBudget; collected, about ${mb(fit.need)}${counted}.`
          : takeTurns === 'auto'
            ? `Taking turns: the sampler and the step together would need about ${mb(fit.together + runtime)}, more than the ${mb(budget)} memoryBudget; in turns about ${mb(fit.need)}${counted}.`
            : `Taking turns (takeTurns: true): about ${mb(fit.need)}${counted} of the ${mb(budget)} memoryBudget.`;
    return {
      mode: rung.mode,
      reason,
      collectGarbage: rung.collect,
      budget,
      together: fit.together,
      inTurns: fit.inTurns,
      runtime,
      activationBudget: Math.min(left, DEFAULT_ACTIVATION_BUDGET),
      microBatchTokens: fit.microBatchTokens,
    };
  }
  return undefined;
}

/** What the refusal says: the estimate against the budget, then every single change that fits (and in which mode, where 'auto' would take turns). */
function refusal(shape: DecoderShape, settings: PlanSettings, budget: number, takeTurns: boolean | 'auto', levers: MemoryLevers): string {
  const together = cheapest(shape, settings, { mode: 'together', collect: false }, budget, levers);
  // Taking turns at its least: collecting, where the runtime can.
  const turns = cheapest(shape, settings, { mode: 'turns', collect: levers.collectGarbage === true }, budget, levers);
  const fitting = (s: PlanSettings) => rungsOf(takeTurns, levers).find((rung) => cheapest(shape, s, rung, budget, levers).fits)?.mode;
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
  const collected = levers.collectGarbage ? ', collecting garbage at each turn' : '';
  const counted = levers.runtimeBytes ? `, each with the runtime's own ${mb(levers.runtimeBytes)}` : '';
  return (
    `A LoRA step at these settings does not fit the ${mb(budget)} memoryBudget ${held}: about ${mb(together.need)} with the sampler beside it, ${mb(turns.need)} taking turns${collected}${counted} (estimateStepMemory). ` +
    `Nothing was trained. It fits with ${options.join(', or ')}.`
  );
}
