/**
 * What the panels of a run that trains an adapter draw: its optimizer updates as chart columns, and
 * its adapter in numbers: the head adapter (z' = z + s (h A) B on the LM head) of a gradient run,
 * or the LoRA pairs (y = x W + s x A^T B^T) on every layer of a lora run. Pure functions of stored data.
 */
import type { GradientConfig, GradientRunRecord, LoraRunRecord, RunBundle } from '../../lib/index.js';
import { readAdapterFile, readLoraAdapterFile, type AdapterCheckpoint } from '../../lib/grad.js';
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

/**
 * The sampler-to-trainer log-prob gap of each step, from its first update: the one made before any
 * update of that step, so both passes ran the same parameters and the gap is what their kernels
 * disagree by (later updates include the step's own changes). Null where a step stored none.
 */
export interface DriftSeries {
  step: number[];
  mean: Array<number | null>;
  max: Array<number | null>;
}

export function driftSeries(bundle: RunBundle): DriftSeries {
  const s: DriftSeries = { step: [], mean: [], max: [] };
  for (const step of bundle.steps) {
    const drift = stepView(step).updates[0]?.logprobDrift;
    s.step.push(step.step);
    s.mean.push(drift?.mean ?? null);
    s.max.push(drift?.max ?? null);
  }
  return s;
}

/**
 * Mean gap (nats per token) above which the sampler and the trainer are said to disagree: float32
 * passes of one model on different kernels differ by about 1e-6; a stale adapter or another model
 * by orders of magnitude more.
 */
export const DRIFT_LIMIT = 1e-3;

/** One sentence on the gap: near zero on policy, or which step first drifted and by how much. */
export function driftNote(s: DriftSeries): string | null {
  const measured = s.mean.flatMap((mean, i) => (mean === null ? [] : [{ step: s.step[i], mean, max: s.max[i] ?? mean }]));
  if (measured.length === 0) return null;
  const drifted = measured.find((m) => m.mean > DRIFT_LIMIT);
  if (drifted) {
    return `Step ${drifted.step} drifted: the trainer's log-probs differ from the sampler's by ${drifted.mean.toExponential(1)} nats per token on average (max ${drifted.max.toExponential(1)}), so the updates are not on the policy that sampled.`;
  }
  const worst = Math.max(...measured.map((m) => m.max));
  const steps = `${measured.length} step${measured.length === 1 ? '' : 's'}`;
  if (worst === 0) return `On policy: sampler and trainer give the same log-probs, token for token, over ${steps}.`;
  return `On policy: sampler and trainer agree to ${worst.toExponential(1)} nats per token at most, over ${steps}.`;
}

/** The adapter after one step: its weights' Frobenius norms and the updates it has had. */
export interface AdapterPoint {
  step: number;
  normA: number;
  normB: number;
  updates: number;
}

/** Norms over every A and every B: one pair on the head, or all of a LoRA adapter's pairs together. */
export function adapterPoint(checkpoint: AdapterCheckpoint): AdapterPoint {
  const { step, optimizer } = checkpoint;
  if (checkpoint.adapter.target === 'decoder') {
    const pairs = readLoraAdapterFile(checkpoint.adapter, 'checkpoint.adapter').layers.flatMap((layer) => Object.values(layer));
    return { step, normA: norm(pairs.map((p) => p.A)), normB: norm(pairs.map((p) => p.B)), updates: optimizer.updates };
  }
  const weights = readAdapterFile(checkpoint.adapter, 'checkpoint.adapter');
  return { step, normA: norm([weights.a]), normB: norm([weights.b]), updates: optimizer.updates };
}

function norm(tensors: Float32Array[]): number {
  let sum = 0;
  for (const values of tensors) for (const v of values) sum += v * v;
  return Math.sqrt(sum);
}

/** The points recorded step by step, with the stored checkpoint's (the latest) where it is missing. */
export function adapterTrace(recorded: readonly AdapterPoint[], latest: AdapterPoint | null): AdapterPoint[] {
  const points = recorded.filter((p) => p.step !== latest?.step);
  if (latest) points.push(latest);
  return points.sort((a, b) => a.step - b.step);
}

/** A run's trace: the points this browser recorded, and the stored checkpoint's step. */
export function runAdapterTrace(bundle: RunBundle, recorded: readonly AdapterPoint[]): AdapterPoint[] {
  let latest: AdapterPoint | null = null;
  try {
    latest = bundle.adapter ? adapterPoint(bundle.adapter) : null;
  } catch {
    // An imported run's damaged checkpoint: the recorded points still draw.
  }
  return adapterTrace(recorded, latest);
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

/** What the adapter panel says a run's adapter is: where it sits, its size, its file. */
export interface AdapterAbout {
  formula: string;
  explanation: string;
  parameters: number | null;
  detail: string;
  file: string;
  /** The download button's label, and the run header's shorter one (both name the file's form). */
  download: string;
  exportLabel: string;
}

const BACKENDS: Record<string, string> = { webgpu: 'WebGPU', wasm: 'WebAssembly', cpu: 'the CPU' };

/**
 * Where a LoRA run's forward and backward ran: onnxruntime's kernels on the policy's backend (runs
 * stored before the backend was kept say only that), or one of the removed engines (the CPU one for
 * runs stored before the engine option).
 */
export function engineLabel(config: { engine?: 'cpu' | 'webgpu' | 'onnxruntime'; backend?: string }): string {
  if (config.engine === 'onnxruntime') return config.backend ? `on ${BACKENDS[config.backend] ?? config.backend}, onnxruntime's kernels` : "on onnxruntime's kernels";
  return config.engine === 'webgpu' ? 'on WebGPU' : 'on the CPU';
}

export function adapterAbout(run: GradientRunRecord | LoraRunRecord, checkpoint: AdapterCheckpoint | undefined): AdapterAbout {
  if (run.kind === 'gradient') {
    const shape = adapterShape(run.config);
    return {
      formula: 'z′ = z + s·(h A) B',
      explanation: 'on the output layer: h is the model’s last hidden state, z its logits. Only A and B train; B starts at zero, so training starts at the base model, which stays the KL reference.',
      parameters: shape.parameters,
      detail: `rank ${shape.rank}, scale ${shape.scale} · d ${shape.hiddenSize}, V ${shape.vocabSize} · ${Math.round(shape.shareOfHead * 100)}% of the head’s`,
      file: 'A webgrpo.adapter file for attachAdapter, or to train further (initialAdapter).',
      download: 'Download adapter (JSON)',
      exportLabel: 'Adapter (JSON)',
    };
  }
  const { r, alpha, targetModules } = run.config.lora;
  // The checkpoint names each pair's dimensions; before the first step only the settings are known.
  const layers = checkpoint?.adapter.target === 'decoder' ? checkpoint.adapter.layers : undefined;
  const parameters = layers ? layers.reduce((n, layer) => n + Object.values(layer).reduce((m, p) => m + r * (p.inDim + p.outDim), 0), 0) : null;
  return {
    formula: 'y = x W + s·(x Aᵀ) Bᵀ',
    explanation: `on ${targetModules.join(', ')} of every layer: the model reads its prompt differently, not only its last layer. B starts at zero, so training starts at the base model; after each step the model samples with the updated A and B as inputs of its graph.`,
    parameters,
    detail: `rank ${r}, alpha ${alpha} (s = ${alpha / r})${layers ? ` · ${layers.length} layers` : ''} · trained ${engineLabel(run.config)}`,
    file: 'PEFT’s LoRA folder (adapter_config.json, adapter_model.safetensors) in a zip: unzip it and load it with PeftModel.from_pretrained(model, folder), or continue it in TRL.',
    download: 'Download adapter (PEFT zip)',
    exportLabel: 'Adapter (PEFT zip)',
  };
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
