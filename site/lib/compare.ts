/**
 * Several stored runs side by side: their curves on one x axis (the step, or an update's place on
 * it) and their settings in one table. Pure functions of run bundles; the curves come from the same
 * series the single-run charts draw (view.ts, adapter-view.ts).
 */
import type { RunBundle } from '../../lib/index.js';
import { runMethod } from '../../lib/method.js';
import { updateSeries } from './adapter-view.js';
import { KIND_SETTINGS, kindView } from './kind-view.js';
import { beforeAfter, percent, pointsChange } from './held-out.js';
import { baselineNote, gainBaseline } from './gain-baseline.js';
import { formatNumber, modelName, runTitle, stepSeries } from './view.js';

/** Curves of several runs on one x axis: null where a run has no point at that x. */
export interface Overlay {
  x: number[];
  series: Array<{ label: string; values: Array<number | null> }>;
}

/** Aligns each run's (x, y) points on the union of their x values. Runs without points are left out. */
export function overlay(curves: ReadonlyArray<{ label: string; x: readonly number[]; y: ReadonlyArray<number | null> }>): Overlay {
  const shown = curves.filter((c) => c.x.length > 0);
  const x = [...new Set(shown.flatMap((c) => c.x))].sort((a, b) => a - b);
  const at = new Map(x.map((value, i) => [value, i]));
  return {
    x,
    series: shown.map(({ label, x: xs, y }) => {
      const values: Array<number | null> = x.map(() => null);
      xs.forEach((value, i) => (values[at.get(value)!] = y[i] ?? null));
      return { label, values };
    }),
  };
}

/** Names that tell the runs apart in a legend: "#1 alphabetise · exemplars, 07:18:02", ... */
export function runLabels(bundles: readonly RunBundle[]): string[] {
  const time = (iso: string) => new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return bundles.map((b, i) => `#${i + 1} ${runTitle(b.run)}, ${time(b.run.createdAt)}`);
}

/** Mean reward per step, per run. */
export function rewardOverlay(bundles: readonly RunBundle[]): Overlay {
  const labels = runLabels(bundles);
  return overlay(
    bundles.map((b, i) => {
      const s = stepSeries(b);
      return { label: labels[i], x: s.step, y: s.mean };
    }),
  );
}

/** KL to the base model per optimizer update (gradient runs with a KL term). */
export function klOverlay(bundles: readonly RunBundle[]): Overlay {
  const labels = runLabels(bundles);
  return overlay(
    bundles.map((b, i) => {
      const s = updateSeries(b);
      const keep = s.kl.map((kl) => kl !== null);
      return { label: labels[i], x: s.x.filter((_, j) => keep[j]), y: s.kl.filter((_, j) => keep[j]) };
    }),
  );
}

/** Experience-library size after each step (training-free runs). */
export function libraryOverlay(bundles: readonly RunBundle[]): Overlay {
  const labels = runLabels(bundles);
  return overlay(
    bundles.map((b, i) => {
      const s = stepSeries(b);
      return { label: labels[i], x: kindView(b.run).keepsLibrary ? s.step : [], y: s.librarySize };
    }),
  );
}

/** A compared run's held-out outcome at one temperature: before the first step and after its latest epoch. */
export interface HeldOutRow {
  /** Index of the run among the compared ones. */
  run: number;
  /** "greedy" or "T=1". */
  decoding: string;
  /** "32 prompts × 2 answers". */
  size: string;
  /** "55% → 89%", with "…" before an epoch has ended; null where the prompts have no answers to match. */
  exactMatch: string | null;
  /** The change in points, or null. */
  points: number | null;
  meanReward: string;
  /** The epoch the "after" side is from, or null. */
  afterEpoch: number | null;
}

/**
 * Each run's held-out evaluations, one row per temperature they were stored at (greedy and T=1
 * where a run has both, as evaluations of their own or as a greedy pass beside T=1); runs with no
 * evaluation have no row.
 */
export function heldOutRows(bundles: readonly RunBundle[]): HeldOutRow[] {
  return bundles.flatMap((b, run) => {
    // A record's greedy pass (`alsoGreedy`) counts as an evaluation at temperature 0 of its epoch.
    const evaluations = (b.run.evaluations ?? []).flatMap((e) => [{ epoch: e.epoch, summary: e.summary }, ...(e.greedyPass ? [{ epoch: e.epoch, summary: e.greedyPass.summary }] : [])]);
    const temperatures = [...new Set(evaluations.map((e) => e.summary.temperature))].sort((x, y) => x - y);
    return temperatures.flatMap((temperature): HeldOutRow[] => {
      const at = evaluations.filter((e) => e.summary.temperature === temperature);
      const before = at.find((e) => e.epoch === 0);
      if (!before) return [];
      const after = at.filter((e) => e.epoch > 0).at(-1) ?? null;
      const s = before.summary;
      const judged = s.judged > 0 || s.accuracy !== null;
      return [
        {
          run,
          decoding: s.greedy ? 'greedy' : `T=${temperature}`,
          size: `${s.items} prompts × ${s.samples} answer${s.samples === 1 ? '' : 's'}`,
          exactMatch: judged ? `${percent(s.accuracy)} → ${after ? percent(after.summary.accuracy) : '…'}` : null,
          points: after ? pointsChange(s.accuracy, after.summary.accuracy) : null,
          meanReward: `${formatNumber(s.meanReward, 3)} → ${after ? formatNumber(after.summary.meanReward, 3) : '…'}`,
          afterEpoch: after?.epoch ?? null,
        },
      ];
    });
  });
}

/** Per run, what one constant reply or one format scores on its held-out prompts and whether its replies collapsed to it (null without). */
export function heldOutBaselines(bundles: readonly RunBundle[]): Array<string | null> {
  return bundles.map((b) => {
    const view = beforeAfter(b);
    const baseline = view && view.before.summary.judged > 0 ? gainBaseline(view.before, view.after) : null;
    return baseline ? baselineNote(baseline) : null;
  });
}

/** One row of the settings table: a setting, and its value in each run ("–" where it does not apply). */
export interface SettingRow {
  setting: string;
  values: string[];
  /** The runs do not all agree on it. */
  differs: boolean;
}

/** The settings of each run, side by side; rows where the runs differ are marked. */
export function settingRows(bundles: readonly RunBundle[]): SettingRow[] {
  const rows: Array<[string, (b: RunBundle) => string]> = [
    ['Method', (b) => runMethod(b.run)],
    ['Model', (b) => `${modelName(b.run.config.policy.model)} on ${b.run.config.policy.backend}`],
    ['Task', (b) => b.run.config.task ?? 'dataset'],
    ['Prompts', (b) => String(b.run.itemCount)],
    ['Group size', (b) => String(b.run.config.groupSize)],
    ['Epochs', (b) => String(b.run.config.epochs)],
    ['Batch', (b) => String(b.run.config.batchSize)],
    ['Temperature', (b) => String(b.run.config.temperature)],
    ['Max tokens', (b) => String(b.run.config.maxNewTokens)],
    ['Seed', (b) => String(b.run.config.seed)],
    ['Rewards', (b) => b.run.config.rewards.map((r) => `${r.name}×${r.weight}`).join(' + ')],
    ...KIND_SETTINGS.map((setting): [string, (b: RunBundle) => string] => [setting, (b) => kindView(b.run).settings(b.run)[setting] ?? '–']),
    ['Status', (b) => b.run.status],
    ['Steps done', (b) => String(b.steps.length)],
  ];
  return rows.map(([setting, value]) => {
    const values = bundles.map(value);
    return { setting, values, differs: new Set(values).size > 1 };
  });
}
