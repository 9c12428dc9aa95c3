/**
 * What the panels of a gradient run draw: its optimizer updates as chart columns, and its adapter
 * (z' = z + s (h A) B on the LM head) in numbers. Pure functions of stored data.
 */
import { readAdapterFile, type AdapterCheckpoint, type GradientConfig, type RunBundle } from '../../lib/index.js';
import { stepView } from './step-payload.js';

/** Columns of the per-update charts. x: an update's place on the step axis (the last of a step sits on it). */
export interface UpdateSeries {
  x: number[];
  step: number[];
  loss: number[];
  kl: Array<number | null>;
  entropy: number[];
  /** Clip ratios of a step's later updates only: its first is on-policy (ratio 1), so never clipped. */
  clipLow: Array<number | null>;
  clipHigh: Array<number | null>;
  clipRegion: Array<number | null>;
  gradNorm: number[];
  /** Mean importance ratio of TRL's sampling correction (rollouts sampled with a filter); null without it. */
  samplingRatio: Array<number | null>;
}

export function updateSeries(bundle: RunBundle): UpdateSeries {
  const s: UpdateSeries = { x: [], step: [], loss: [], kl: [], entropy: [], clipLow: [], clipHigh: [], clipRegion: [], gradNorm: [], samplingRatio: [] };
  for (const step of bundle.steps) {
    const { updates } = stepView(step);
    updates.forEach((m, i) => {
      s.x.push(step.step - 1 + (i + 1) / updates.length);
      s.step.push(step.step);
      s.loss.push(m.loss);
      s.kl.push(m.kl ?? null);
      s.entropy.push(m.entropy);
      s.clipLow.push(i > 0 ? m.clipRatioLow : null);
      s.clipHigh.push(i > 0 ? m.clipRatioHigh : null);
      s.clipRegion.push(i > 0 ? m.clipRatioRegion : null);
      s.gradNorm.push(m.gradNorm);
      s.samplingRatio.push(m.importanceSamplingRatio?.mean ?? null);
    });
  }
  return s;
}

/** The adapter after one step: its weights' Frobenius norms and the updates it has had. */
export interface AdapterPoint {
  step: number;
  normA: number;
  normB: number;
  updates: number;
}

export function adapterPoint(checkpoint: AdapterCheckpoint): AdapterPoint {
  const weights = readAdapterFile(checkpoint.adapter, 'checkpoint.adapter');
  return { step: checkpoint.step, normA: norm(weights.a), normB: norm(weights.b), updates: checkpoint.optimizer.updates };
}

function norm(values: Float32Array): number {
  let sum = 0;
  for (const v of values) sum += v * v;
  return Math.sqrt(sum);
}

/** The points recorded step by step, with the stored checkpoint's (the latest) where it is missing. */
export function adapterTrace(recorded: readonly AdapterPoint[], latest: AdapterPoint | null): AdapterPoint[] {
  const points = recorded.filter((p) => p.step !== latest?.step);
  if (latest) points.push(latest);
  return points.sort((a, b) => a.step - b.step);
}

export interface AdapterShapeSummary {
  rank: number;
  scale: number;
  hiddenSize: number;
  vocabSize: number;
  /** Trainable parameters: A (d x r) and B (r x V). */
  parameters: number;
  /** Its share of the LM head's d x V weights. */
  shareOfHead: number;
}

export function adapterShape(config: GradientConfig): AdapterShapeSummary {
  const { rank, scale, hiddenSize, vocabSize } = config.adapter;
  const parameters = rank * (hiddenSize + vocabSize);
  return { rank, scale, hiddenSize, vocabSize, parameters, shareOfHead: parameters / (hiddenSize * vocabSize) };
}

/** 1840, 12.3k, 1.2M. */
export function formatCount(n: number): string {
  if (n < 10_000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}
