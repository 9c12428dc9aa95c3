/**
 * What the panels draw, derived from a stored run (a `RunBundle`: its record, dataset, committed
 * steps and the finished items of the step in progress). Pure functions of plain data.
 */
import { emptyLibrary, type EpochStats, type ExperienceLibrary, type ItemResult, type RunBundle, type RunRecord, type StepRouting } from '../../lib/index.js';
import { epochStats, runMethod } from '../../lib/method.js';
import type { TrainStepMetrics } from '../../lib/grad.js';
import { stepView } from './step-payload.js';

/** Steps in one epoch (the loop's schedule: the dataset in batches). */
export function stepsPerEpoch(bundle: RunBundle): number {
  return Math.max(1, Math.ceil(bundle.run.itemCount / bundle.run.config.batchSize));
}

export function totalSteps(bundle: RunBundle): number {
  return stepsPerEpoch(bundle) * bundle.run.config.epochs;
}

/**
 * Per epoch with at least one committed step; `partial` while the epoch is not finished.
 * `lastUpdate`: gradient runs, the epoch's last optimizer update. `routing`: router runs, the
 * router after the epoch's last step.
 */
export function epochRows(bundle: RunBundle): Array<EpochStats & { partial: boolean; lastUpdate?: TrainStepMetrics; routing?: StepRouting }> {
  const byEpoch = new Map<number, RunBundle['steps']>();
  for (const step of bundle.steps) byEpoch.set(step.epoch, [...(byEpoch.get(step.epoch) ?? []), step]);
  return [...byEpoch].map(([epoch, steps]) => {
    const last = stepView(steps[steps.length - 1]);
    const lastUpdate = last.updates.at(-1);
    return {
      ...epochStats(epoch, steps, last.library ?? bundle.run.initialLibrary),
      partial: steps.length < stepsPerEpoch(bundle),
      ...(lastUpdate ? { lastUpdate } : {}),
      ...(last.routing ? { routing: last.routing } : {}),
    };
  });
}

/** Columns for the step charts (x: step number); null where a step had nothing scorable. */
export interface StepSeries {
  step: number[];
  epoch: number[];
  mean: Array<number | null>;
  low: Array<number | null>;
  high: Array<number | null>;
  zeroSpread: number[];
  librarySize: number[];
  added: number[];
  updated: number[];
  deleted: number[];
}

export function stepSeries(bundle: RunBundle): StepSeries {
  const s: StepSeries = { step: [], epoch: [], mean: [], low: [], high: [], zeroSpread: [], librarySize: [], added: [], updated: [], deleted: [] };
  for (const step of bundle.steps) {
    const { meanReward, stdReward, groups, zeroSpreadGroups } = step.stats;
    const sd = stdReward ?? 0;
    s.step.push(step.step);
    s.epoch.push(step.epoch);
    s.mean.push(meanReward);
    s.low.push(meanReward === null ? null : meanReward - sd);
    s.high.push(meanReward === null ? null : meanReward + sd);
    s.zeroSpread.push(groups ? zeroSpreadGroups / groups : 0);
    const { library = bundle.run.initialLibrary, applied } = stepView(step);
    s.librarySize.push(library.entries.length + library.exemplars.length);
    const count = (kind: string) => applied.filter((a) => a.operation === kind).length;
    s.added.push(count('ADD'));
    s.updated.push(count('UPDATE'));
    s.deleted.push(count('DELETE'));
  }
  return s;
}

/** The library before step 1 (step 0) or after a committed step. */
export function libraryAfter(bundle: RunBundle, step: number): ExperienceLibrary {
  if (step <= 0) return bundle.run.initialLibrary ?? emptyLibrary();
  const shown = bundle.steps.find((s) => s.step === step) ?? bundle.steps[bundle.steps.length - 1];
  return (shown && stepView(shown).library) ?? bundle.run.initialLibrary;
}

/** The highest step with anything to show: the last committed one, or the one in progress. */
export function lastStepShown(bundle: RunBundle): number {
  const committed = bundle.steps[bundle.steps.length - 1]?.step ?? 0;
  return bundle.pending.length > 0 ? committed + 1 : committed;
}

/** The groups of a step, committed or (for the step in progress) finished so far. */
export function groupsAt(bundle: RunBundle, step: number): ItemResult[] {
  const committed = bundle.steps.find((s) => s.step === step);
  if (committed) return committed.items;
  return bundle.pending.filter((r) => r.step === step).sort((a, b) => a.position - b.position);
}

/** True when a group's rewards all tie: every advantage is 0, so it teaches nothing. */
export function noSignal(result: Pick<ItemResult, 'stats'>): boolean {
  return !(result.stats.spread > 0);
}

/**
 * One line for a group with no signal, shown instead of its card (a run's page was otherwise
 * mostly such groups): its answers, the same text or how many distinct, and the reward they tied at.
 */
export function flatSummary(result: Pick<ItemResult, 'rollouts' | 'stats'>): string {
  const texts = new Set(result.rollouts.map((r) => r.text));
  const n = result.rollouts.length;
  const reward = formatNumber(result.stats.mean, 3);
  const answers = texts.size === 1 ? `all ${n} answers the same, “${clip([...texts][0])}”` : `${n} answers (${texts.size} distinct)`;
  return `No signal: ${answers}, every reward ${reward}, every advantage 0.`;
}

/** Model output in a summary line: untrusted text, kept to one short line. */
function clip(text: string, max = 60): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * The groups in the order that teaches most first: the widest spread of rewards first, the groups
 * with no signal last, ties in batch order.
 */
export function instructiveOrder(groups: readonly ItemResult[]): ItemResult[] {
  return [...groups].sort((a, b) => b.stats.spread - a.stats.spread || a.position - b.position);
}

export function epochOfStep(bundle: RunBundle, step: number): number {
  return Math.ceil(step / stepsPerEpoch(bundle));
}

/** Items done over the whole run (each epoch counts every item again). */
export function itemsDone(bundle: RunBundle): number {
  return bundle.steps.reduce((n, s) => n + s.items.length, 0) + bundle.pending.length;
}

export function totalItems(bundle: RunBundle): number {
  return bundle.run.itemCount * bundle.run.config.epochs;
}

export function formatNumber(x: number | null | undefined, digits = 2): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(digits);
}

export function formatSigned(x: number, digits = 2): string {
  if (!Number.isFinite(x)) return '–';
  const shown = Math.abs(x).toFixed(digits);
  return Number(shown) === 0 ? shown : `${x > 0 ? '+' : '−'}${shown}`;
}

export type DisplayStatus = 'running' | 'paused' | 'interrupted' | 'cancelled' | 'failed' | 'completed';

/** A run's status as this tab sees it: a stored "running" run that no loop here drives was interrupted. */
export function displayStatus(run: RunRecord, live: { runId: string; paused: boolean } | null): DisplayStatus {
  if (live?.runId === run.id) return live.paused ? 'paused' : 'running';
  if (run.status === 'running') return 'interrupted';
  return run.status === 'aborted' ? 'cancelled' : run.status;
}

export const STATUS_CLASS: Record<DisplayStatus, string> = {
  running: 'running',
  paused: 'paused',
  interrupted: 'interrupted',
  cancelled: 'aborted',
  failed: 'failed',
  completed: 'completed',
};

/** The model's short name: the last part of a hub id or path. */
export function modelName(model: string): string {
  return model.replace(/\/+$/, '').split('/').pop() || model;
}

export function runTitle(run: RunRecord): string {
  return `${run.config.task ?? 'dataset'} · ${runMethod(run)}`;
}
