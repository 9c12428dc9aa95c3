/**
 * Supervised pretraining on the full-parameter engine (lib/train/full-engine.ts, onnxruntime's
 * kernels): each update averages, over a batch of examples, the mean negative log-likelihood of
 * each reply's tokens (dlogp = -1 / (N B) on each of the N reply tokens), then AdamW with global
 * clipping under a warmup + cosine rate. The batch runs as a few forward and backward graph runs
 * (one graph row per example, examples of similar length together) on `config.workers`
 * onnxruntime threads. With `checkpoint`, the run writes its state every `every` updates and at its
 * end (checkpoint.ts), and a run started again with the same file and key goes on from the last
 * one: the same updates on the same examples in the same order, so the final weights are the
 * unbroken run's, bit for bit (one engine thread, as the sums' order can depend on the count).
 */
import * as ort from 'onnxruntime-node';
import { clipFactor, resolveOptimizer } from '../../lib/train/optimizer.js';
import type { DecoderWeights } from '../../lib/weights/decoder.js';
import type { DatasetItem } from '../../lib/core/dataset.js';
import type { OnnxPolicy } from '../../lib/policy/onnx/policy.js';
import { FullTrainingEngine } from '../../lib/train/full-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { learningRate, type TrainSchedule } from './config.js';
import type { Example } from './corpus.js';
import { readCheckpoint, writeCheckpoint } from './checkpoint.js';
import { AbortError, InvalidInputError } from '../../lib/errors.js';

/**
 * The exported ONNX model must be the engine's model: the largest |difference| between
 * onnxruntime's log-probs of `item`'s answer (through `policy`, on the tokenizer's chat prompt) and
 * the engine's on `weights`. Throws above 1e-4.
 */
export async function exportedLogprobDifference(policy: OnnxPolicy, weights: DecoderWeights, item: DatasetItem): Promise<number> {
  const engine = await pretrainEngine(weights, 1);
  try {
    const reply = [...(await policy.encode!(item.answer as string))];
    const scored = await policy.scoreCompletions!({ messages: item.messages, completions: [reply] });
    const group = await policy.generateGroup({ messages: item.messages, groupSize: 1, maxNewTokens: 1, temperature: 0 });
    const graph = (await engine.forward([{ prompt: group.promptTokenIds, completions: [reply] }], { temperature: 1, reference: false })).logps;
    const difference = Math.max(...Array.from(graph, (lp, k) => Math.abs(lp - scored.logprobs[0][k])));
    if (!(difference <= 1e-4)) throw new Error(`onnxruntime's log-probs differ from the engine's by ${difference}`);
    return difference;
  } finally {
    engine.dispose();
  }
}

export interface TrainLog {
  step: number;
  loss: number;
  lr: number;
  gradNorm: number;
  rows: number;
  seconds: number;
}

export interface TrainResult {
  /** Rows (prompt and reply tokens) through the forward and backward. */
  rows: number;
  seconds: number;
  /** Threads onnxruntime computed the gradients on. */
  workers: number;
  /** The last update's loss (NaN when a resumed run had no update left to do). */
  finalLoss: number;
  /** Updates a checkpoint had done before this process resumed the run (absent: it ran from the start). */
  resumedFrom?: number;
}

/** The engine pretraining runs on: onnxruntime-node with `threads` intra-op threads (a fixed count: the sums' order can depend on it). */
export function pretrainEngine(weights: DecoderWeights, threads: number): Promise<FullTrainingEngine> {
  return FullTrainingEngine.create(ort as unknown as GraphRuntime, weights, { sessionOptions: { intraOpNumThreads: threads, interOpNumThreads: 1 } });
}

/** One batch's mean reply negative log-likelihood and its d loss / d logp, in the engine's slot order. */
export function supervisedLoss(batch: readonly Example[], logps: Float64Array): { loss: number; dLogp: Float64Array } {
  const dLogp = new Float64Array(logps.length);
  let loss = 0;
  let slot = 0;
  for (const example of batch) {
    const n = example.replyIds.length;
    loss -= logps.subarray(slot, slot + n).reduce((s, lp) => s + lp, 0) / n / batch.length;
    dLogp.fill(-1 / (n * batch.length), slot, slot + n);
    slot += n;
  }
  return { loss, dLogp };
}

export interface PretrainOptions {
  /** Where the run's checkpoint lives, how many updates apart it is written, and what run it is (a resume must match). */
  checkpoint?: { file: string; every: number; key: string };
  /** Log every this many updates (default 25) and at the end. */
  logEvery?: number;
  /** Checked before each update; a stopped run keeps its last checkpoint. */
  signal?: AbortSignal;
}

export async function pretrain(weights: DecoderWeights, corpus: readonly Example[], config: TrainSchedule, onLog: (log: TrainLog) => void, options: PretrainOptions = {}): Promise<TrainResult> {
  const optimizer = resolveOptimizer({ lr: config.lr, weightDecay: config.weightDecay, maxGradNorm: config.maxGradNorm });
  const engine = await pretrainEngine(weights, config.workers);
  const { checkpoint, logEvery = 25, signal } = options;
  let first = 0;
  let rows = 0;
  let before = 0;
  let recent = 0;
  let recentCount = 0;
  let finalLoss = NaN;
  try {
    const saved = checkpoint && (await readCheckpoint(checkpoint.file));
    if (saved) {
      if (saved.key !== checkpoint.key) throw new InvalidInputError('checkpoint', `${checkpoint.file} belongs to another run (its config or corpus differs); delete it to start this one.`);
      engine.load(saved.state);
      [first, rows, before] = [saved.step, saved.rows, saved.seconds];
    }
    const started = performance.now();
    const seconds = () => before + (performance.now() - started) / 1000;
    const save = async (step: number) => checkpoint && writeCheckpoint(checkpoint.file, { key: checkpoint.key, step, rows, seconds: seconds(), state: await engine.read() });
    for (let step = first; step < config.steps; step++) {
      if (signal?.aborted) throw new AbortError(`pretraining stopped before update ${step + 1}; the checkpoint keeps the last one written.`);
      const batch = Array.from({ length: config.batch }, (_, b) => corpus[(step * config.batch + b) % corpus.length]);
      const stats = await engine.forward(
        batch.map((e) => ({ prompt: e.promptIds, completions: [e.replyIds] })),
        { temperature: 1, reference: false },
      );
      const { loss, dLogp } = supervisedLoss(batch, stats.logps);
      const gradNorm = await engine.backward(dLogp, new Float64Array(dLogp.length));
      if (!Number.isFinite(gradNorm)) throw new Error(`Step ${step + 1}: the gradient is not finite; the weights are unchanged.`);
      const lr = learningRate(config, step);
      await engine.step({ ...optimizer, lr }, clipFactor(gradNorm, optimizer.maxGradNorm));
      rows += batch.reduce((n, e) => n + e.promptIds.length + e.replyIds.length, 0);
      recent += loss;
      recentCount++;
      finalLoss = loss;
      if (checkpoint && ((step + 1) % checkpoint.every === 0 || step === config.steps - 1)) await save(step + 1);
      if ((step + 1) % logEvery === 0 || step === config.steps - 1) {
        onLog({ step: step + 1, loss: recent / recentCount, lr, gradNorm, rows, seconds: seconds() });
        recent = 0;
        recentCount = 0;
      }
    }
    return { rows, seconds: seconds(), workers: config.workers, finalLoss, ...(first > 0 ? { resumedFrom: first } : {}) };
  } finally {
    engine.dispose();
  }
}
