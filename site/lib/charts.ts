/**
 * uPlot options for the playground's charts: the per-step run charts and the per-group
 * reward/advantage plot. Colours match the CSS tokens; legends are drawn in HTML by the components.
 */
import uPlot from 'uplot';
import type { AdapterPoint, DriftSeries, UpdateSeries } from './adapter-view.js';
import type { ClassSeries } from './router-view.js';
import type { StepSeries } from './view.js';

export const COLORS = {
  accent: '#4f46e5',
  accentBand: 'rgba(79, 70, 229, 0.14)',
  zero: '#64748b',
  library: '#0f766e',
  added: '#16a34a',
  updated: '#d97706',
  deleted: '#dc2626',
  pos: '#15803d',
  neg: '#c2410c',
  flat: '#64748b',
  grid: '#eceef2',
  axis: '#5b6576',
  loss: '#4f46e5',
  kl: '#0f766e',
  entropy: '#7c3aed',
  gradNorm: '#b45309',
  adapter: '#0e7490',
};

const font = '12px system-ui, sans-serif';

function axis(label: string | undefined, extra: Partial<uPlot.Axis> = {}): uPlot.Axis {
  return {
    stroke: COLORS.axis,
    font,
    labelFont: font,
    grid: { stroke: COLORS.grid, width: 1 },
    ticks: { stroke: COLORS.grid, width: 1, size: 4 },
    ...(label ? { label, labelSize: 18 } : {}),
    ...extra,
  };
}

/** How a run's steps fall into epochs (the x axis of the run charts). */
export interface StepLayout {
  totalSteps: number;
  stepsPerEpoch: number;
}

/**
 * Steps 1..total of the whole run on the x axis, so a live run fills the chart from the left;
 * every other epoch is shaded and each is labelled, when there is more than one.
 */
function stepAxis({ totalSteps, stepsPerEpoch }: StepLayout): { scale: uPlot.Scale; axis: uPlot.Axis; hooks: uPlot.Hooks.Arrays } {
  const epochs = Math.ceil(totalSteps / stepsPerEpoch);
  const shadeEpochs = (u: uPlot) => {
    if (epochs < 2) return;
    const { ctx } = u;
    const { top, height } = u.bbox;
    ctx.save();
    ctx.font = `${Math.round(11 * uPlot.pxRatio)}px system-ui, sans-serif`;
    ctx.textBaseline = 'top';
    for (let e = 0; e < epochs; e++) {
      const left = u.valToPos(e * stepsPerEpoch + 0.5, 'x', true);
      const right = u.valToPos(Math.min(totalSteps, (e + 1) * stepsPerEpoch) + 0.5, 'x', true);
      if (e % 2 === 1) {
        ctx.fillStyle = 'rgba(100, 116, 139, 0.07)';
        ctx.fillRect(left, top, right - left, height);
      }
      if (right - left > 48 * uPlot.pxRatio) {
        // In the padding above the plot, where no line or point is drawn.
        ctx.fillStyle = COLORS.axis;
        ctx.fillText(`epoch ${e + 1}`, left + 4 * uPlot.pxRatio, top - EPOCH_LABEL_HEIGHT * uPlot.pxRatio);
      }
    }
    ctx.restore();
  };
  return {
    scale: { time: false, range: [0.5, Math.max(1, totalSteps) + 0.5] },
    axis: axis('step', { size: 30, labelSize: 14, labelGap: 0, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500], values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? String(t) : '')) }),
    hooks: { drawClear: [shadeEpochs] },
  };
}

/** The room above a step chart's plot for its epoch labels (CSS pixels). */
const EPOCH_LABEL_HEIGHT = 14;

const base = (): Pick<uPlot.Options, 'legend' | 'cursor' | 'padding'> => ({
  legend: { show: false },
  cursor: { show: false },
  padding: [EPOCH_LABEL_HEIGHT + 6, 12, 0, 0],
});

const points = (color: string, size = 7): uPlot.Series.Points => ({ show: true, size, stroke: color, fill: color });

/** Mean reward per step, with a band of ±1 standard deviation across all completions of the step. */
/** What `Chart.svelte` draws: uPlot's options (it sizes the chart) and the columns. */
export interface Plot {
  options: Omit<uPlot.Options, 'width' | 'height'>;
  data: uPlot.AlignedData;
}

export function rewardChart(s: StepSeries, layout: StepLayout): Plot {
  const x = stepAxis(layout);
  return {
    options: {
      ...base(),
      hooks: x.hooks,
      scales: { x: x.scale, y: { range: (_u, min, max) => [Math.min(0, min), Math.max(max, min + 0.1)] } },
      axes: [x.axis, axis('reward')],
      series: [
        {},
        { stroke: 'transparent', points: { show: false } },
        { stroke: 'transparent', points: { show: false } },
        { stroke: COLORS.accent, width: 2, points: points(COLORS.accent) },
      ],
      bands: [{ series: [1, 2], fill: COLORS.accentBand }],
    },
    data: [s.step, s.high, s.low, s.mean],
  };
}

const bars = (size = 0.55) => uPlot.paths.bars!({ size: [size, 42], gap: 2 });

/** Share of groups whose completions all got the same reward: no signal to learn from. */
export function zeroSpreadChart(s: StepSeries, layout: StepLayout) {
  const x = stepAxis(layout);
  return {
    options: {
      ...base(),
      hooks: x.hooks,
      scales: { x: x.scale, y: { range: [0, 1] as uPlot.Range.MinMax } },
      axes: [x.axis, axis('zero-spread groups', { values: (_u: uPlot, t: number[]) => t.map((v) => `${Math.round(v * 100)}%`) })],
      series: [{}, { stroke: COLORS.zero, fill: 'rgba(100, 116, 139, 0.35)', paths: bars(), points: { show: false } }],
    } satisfies Omit<uPlot.Options, 'width' | 'height'>,
    data: [s.step, s.zeroSpread] as uPlot.AlignedData,
  };
}

/** Library size after each step. */
export function libraryChart(s: StepSeries, layout: StepLayout) {
  const x = stepAxis(layout);
  return {
    options: {
      ...base(),
      hooks: x.hooks,
      scales: { x: x.scale, y: { range: (_u: uPlot, _min: number, max: number) => [0, Math.max(4, Math.ceil(max * 1.15))] as uPlot.Range.MinMax } },
      axes: [x.axis, axis('entries', { incrs: [1, 2, 5, 10, 20, 50] })],
      series: [{}, { stroke: COLORS.library, width: 2, fill: 'rgba(15, 118, 110, 0.10)', points: points(COLORS.library) }],
    } satisfies Omit<uPlot.Options, 'width' | 'height'>,
    data: [s.step, s.librarySize] as uPlot.AlignedData,
  };
}

/** Operations per step, stacked: added (bottom), updated, deleted (top). */
export function operationsChart(s: StepSeries, layout: StepLayout) {
  const x = stepAxis(layout);
  const au = s.added.map((a, i) => a + s.updated[i]);
  const all = au.map((v, i) => v + s.deleted[i]);
  const layer = (color: string) => ({ stroke: color, fill: color, paths: bars(), points: { show: false } });
  return {
    options: {
      ...base(),
      hooks: x.hooks,
      scales: { x: x.scale, y: { range: (_u: uPlot, _min: number, max: number) => [0, Math.max(2, Math.ceil(max * 1.15))] as uPlot.Range.MinMax } },
      axes: [x.axis, axis('operations', { incrs: [1, 2, 5, 10, 20, 50] })],
      // Drawn in order, each over the last: the totals first, so the layers read as a stack.
      series: [{}, layer(COLORS.deleted), layer(COLORS.updated), layer(COLORS.added)],
    } satisfies Omit<uPlot.Options, 'width' | 'height'>,
    data: [s.step, all, au, s.added] as uPlot.AlignedData,
  };
}

/** A horizontal dashed line at `value` (a limit, or zero), drawn under the series. */
function markLevel(value: number): uPlot.Hooks.Arrays {
  return {
    drawAxes: [
      (u) => {
        const { ctx } = u;
        const { left, width } = u.bbox;
        const at = u.valToPos(value, 'y', true);
        ctx.save();
        ctx.strokeStyle = COLORS.axis;
        ctx.lineWidth = uPlot.pxRatio;
        ctx.setLineDash([4 * uPlot.pxRatio, 3 * uPlot.pxRatio]);
        ctx.beginPath();
        ctx.moveTo(left, at);
        ctx.lineTo(left + width, at);
        ctx.stroke();
        ctx.restore();
      },
    ],
  };
}

/** Small values read better as 0.0012 than as 1.2e-3; big ones need no decimals. */
const compact = (_u: uPlot, ticks: number[]) => ticks.map((v) => (v === 0 ? '0' : Math.abs(v) >= 100 ? v.toFixed(0) : String(Number(v.toPrecision(2)))));

/**
 * One metric of the optimizer updates (loss, KL, entropy, gradient norm), one point per update.
 * `level`: a dashed reference line (zero loss, the clipping threshold of the gradient norm).
 */
export function updateChart(x: number[], y: Array<number | null>, layout: StepLayout, options: { label: string; color: string; level?: number; fromZero?: boolean }) {
  const xs = stepAxis(layout);
  const { level, fromZero = false } = options;
  const hooks: uPlot.Hooks.Arrays = { ...xs.hooks, ...(level !== undefined ? markLevel(level) : {}) };
  return {
    options: {
      ...base(),
      hooks,
      scales: {
        x: xs.scale,
        y: {
          range: (_u: uPlot, min: number, max: number): uPlot.Range.MinMax => {
            const lo = Math.min(fromZero ? 0 : min, level ?? min);
            const hi = Math.max(max, level ?? max);
            const pad = (hi - lo || Math.abs(hi) || 1) * 0.12;
            return [fromZero && lo >= 0 ? 0 : lo - pad, hi + pad];
          },
        },
      },
      axes: [xs.axis, axis(options.label, { values: compact })],
      series: [{}, { stroke: options.color, width: 2, points: points(options.color, 5) }],
    } satisfies Omit<uPlot.Options, 'width' | 'height'>,
    data: [x, y] as uPlot.AlignedData,
  };
}

/** The sampler-to-trainer log-prob gap per step (mean and max over the batch's tokens), on a log scale. */
export function driftChart(s: DriftSeries, layout: StepLayout, limit: number) {
  const xs = stepAxis(layout);
  // A log scale has no zero: a gap of exactly 0 (one engine) is drawn at the floor.
  const floor = 1e-9;
  const lift = (values: Array<number | null>) => values.map((v) => (v === null ? null : Math.max(v, floor)));
  return {
    options: {
      ...base(),
      hooks: { ...xs.hooks, ...markLevel(limit) },
      scales: { x: xs.scale, y: { distr: 3, range: (_u: uPlot, _min: number, max: number): uPlot.Range.MinMax => [floor, Math.max(max, limit) * 10] } },
      axes: [xs.axis, axis('nats per token', { values: (_u, ticks) => ticks.map((v) => (v == null ? '' : v.toExponential(0))) })],
      series: [
        {},
        { stroke: COLORS.kl, width: 2, spanGaps: true, points: points(COLORS.kl, 5) },
        { stroke: COLORS.gradNorm, width: 1.5, dash: [4, 3], spanGaps: true, points: points(COLORS.gradNorm, 4) },
      ],
    } satisfies Omit<uPlot.Options, 'width' | 'height'>,
    data: [s.step, lift(s.mean), lift(s.max)] as uPlot.AlignedData,
  };
}

/** The shares of tokens whose probability ratio was clipped (low, high) and either, in a step's later updates. */
export function clipChart(s: UpdateSeries, layout: StepLayout) {
  const xs = stepAxis(layout);
  const line = (color: string, dash?: number[]) => ({ stroke: color, width: 2, spanGaps: true, ...(dash ? { dash } : {}), points: points(color, 4) });
  return {
    options: {
      ...base(),
      hooks: xs.hooks,
      scales: { x: xs.scale, y: { range: (_u: uPlot, _min: number, max: number) => [0, Math.max(0.05, max * 1.15)] as uPlot.Range.MinMax } },
      axes: [xs.axis, axis('clipped tokens', { values: (_u: uPlot, t: number[]) => t.map((v) => `${Number((v * 100).toPrecision(2))}%`) })],
      series: [{}, line(COLORS.accent), line(COLORS.neg, [5, 3]), line(COLORS.library, [2, 3])],
    } satisfies Omit<uPlot.Options, 'width' | 'height'>,
    data: [s.x, s.clipRegion, s.clipLow, s.clipHigh] as uPlot.AlignedData,
  };
}

/** The norm of the adapter's B after each step: how far training has moved the head from the base model. */
export function adapterChart(trace: readonly AdapterPoint[], layout: StepLayout) {
  const xs = stepAxis(layout);
  return {
    options: {
      ...base(),
      hooks: xs.hooks,
      scales: { x: xs.scale, y: { range: (_u: uPlot, _min: number, max: number) => [0, Math.max(0.01, max * 1.15)] as uPlot.Range.MinMax } },
      axes: [xs.axis, axis(undefined, { values: compact, size: 40 })],
      series: [{}, { stroke: COLORS.adapter, width: 2, fill: 'rgba(14, 116, 144, 0.10)', points: points(COLORS.adapter, 6) }],
    } satisfies Omit<uPlot.Options, 'width' | 'height'>,
    data: [trace.map((p) => p.step), trace.map((p) => p.normB)] as uPlot.AlignedData,
  };
}

/**
 * One group: each completion's reward (x) against its advantage (y). The dashed line is the group
 * mean: completions right of it have positive advantage. Rows with no reward are left out.
 */
export function groupChart(rewards: ReadonlyArray<number | null>, advantages: readonly number[], mean: number | null) {
  const rows = rewards
    .map((r, i) => ({ r, a: advantages[i] }))
    .filter((row): row is { r: number; a: number } => row.r !== null && Number.isFinite(row.r))
    .sort((p, q) => p.r - q.r);
  const pick = (test: (a: number) => boolean) => rows.map((row) => (test(row.a) ? row.a : null));
  const maxAbs = Math.max(1.2, ...rows.map((row) => Math.abs(row.a))) * 1.2;
  // Advantages are relative to the group, so the x axis spans the group's rewards, not 0..1.
  // At least 0.1 wide around the middle, so labels stay short; a group whose rewards all tie gets
  // one reward unit around its value (1 to 2 for 1.5), not a zoom onto one point.
  const { lo, hi } = rewardWindow(rows.length ? rows[0].r : 0, rows.length ? rows[rows.length - 1].r : 1);
  const markLine = (u: uPlot, axis: 'x' | 'y', value: number, dash: number[]) => {
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    const at = u.valToPos(value, axis, true);
    ctx.save();
    ctx.strokeStyle = COLORS.axis;
    ctx.lineWidth = uPlot.pxRatio;
    ctx.setLineDash(dash.map((d) => d * uPlot.pxRatio));
    ctx.beginPath();
    if (axis === 'x') {
      ctx.moveTo(at, top);
      ctx.lineTo(at, top + height);
    } else {
      ctx.moveTo(left, at);
      ctx.lineTo(left + width, at);
    }
    ctx.stroke();
    ctx.restore();
  };
  const options: Omit<uPlot.Options, 'width' | 'height'> = {
    ...base(),
    scales: { x: { time: false, range: [lo, hi] }, y: { range: [-maxAbs, maxAbs] } },
    axes: [
      axis('reward', { size: 30, labelSize: 14, labelGap: 0 }),
      axis('advantage', { space: 18, incrs: [0.5, 1, 2, 5, 10], values: (_u, t) => t.map((v) => (v > 0 ? `+${v}` : String(v))) }),
    ],
    series: [
      {},
      { stroke: COLORS.pos, paths: () => null, points: points(COLORS.pos, 11) },
      { stroke: COLORS.neg, paths: () => null, points: points(COLORS.neg, 11) },
      { stroke: COLORS.flat, paths: () => null, points: points(COLORS.flat, 11) },
    ],
    hooks: {
      drawAxes: [
        (u) => {
          markLine(u, 'y', 0, []);
          if (mean !== null) markLine(u, 'x', mean, [4, 3]);
        },
      ],
    },
  };
  const data: uPlot.AlignedData = [rows.map((row) => row.r), pick((a) => a > 1e-9), pick((a) => a < -1e-9), pick((a) => Math.abs(a) <= 1e-9)];
  return { options, data };
}

/** The x range of a group's chart: its rewards with a margin, at least 0.1 wide; 1 wide when they all tie. */
export function rewardWindow(min: number, max: number): { lo: number; hi: number } {
  if (max === min) return { lo: min - 0.5, hi: min + 0.5 };
  const span = Math.max(max - min, 0.1);
  const mid = (min + max) / 2;
  return { lo: mid - span * 0.6, hi: mid + span * 0.6 };
}

/** One query class: each arm's routing probability after each step, one line per arm in `colors`' order. */
export function routingChart(s: ClassSeries, colors: readonly string[], layout: StepLayout) {
  const xs = stepAxis(layout);
  return {
    options: {
      ...base(),
      hooks: xs.hooks,
      scales: { x: xs.scale, y: { range: [0, 1] as uPlot.Range.MinMax } },
      axes: [xs.axis, axis('probability', { values: (_u: uPlot, t: number[]) => t.map((v) => `${Math.round(v * 100)}%`) })],
      series: [{}, ...s.probabilities.map((_, i) => ({ stroke: colors[i], width: 2, points: points(colors[i], 5) }))],
    } satisfies Omit<uPlot.Options, 'width' | 'height'>,
    data: [s.step, ...s.probabilities] as uPlot.AlignedData,
  };
}

/** One colour per compared run, in order. */
export const RUN_COLORS = ['#4f46e5', '#d97706', '#0f766e', '#be185d', '#0369a1', '#65a30d'] as const;

/** Several runs' curves on one chart, a line per run in `RUN_COLORS` order; the legend is HTML. */
export function overlayChart(
  o: { x: number[]; series: ReadonlyArray<{ values: Array<number | null> }> },
  options: { xLabel: string; yLabel: string; fromZero?: boolean; wholeSteps?: boolean },
): Plot {
  const whole = options.wholeSteps ? { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500] } : {};
  return {
    options: {
      ...base(),
      scales: {
        x: { time: false },
        y: { range: (_u: uPlot, min: number, max: number): uPlot.Range.MinMax => [options.fromZero ? Math.min(0, min) : min - (max - min || 1) * 0.1, max + (max - min || 1) * 0.1] },
      },
      axes: [axis(options.xLabel, { size: 30, labelSize: 14, labelGap: 0, ...whole }), axis(options.yLabel)],
      series: [{}, ...o.series.map((_, i) => ({ stroke: RUN_COLORS[i % RUN_COLORS.length], width: 2, spanGaps: true, points: points(RUN_COLORS[i % RUN_COLORS.length], 5) }))],
    },
    data: [o.x, ...o.series.map((s) => s.values)] as uPlot.AlignedData,
  };
}
