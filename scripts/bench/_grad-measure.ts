/**
 * Train-step measurements shared by Node and the bench page (scripts/bench/pages/grad.html):
 *
 * - `measureTrainStep`: a real batch on a real policy. The first `trainStep` on a batch runs the
 *   frozen model over prompt + completions and then the adapter's update; further updates on the
 *   same batch (TRL's num_iterations) run the adapter's part only.
 * - `measureEngine`: the adapter's part alone on given shapes, phase by phase (forward: adapted
 *   and reference log-probs; backward: dA, dB and the norm; AdamW), with random token states, so
 *   the WebGPU kernels can be timed on the bench model's shapes without its (slow) forward pass.
 */
import { grpoObjective, tokenLayout } from '../../lib/train/objective.js';
import { groupRolloutBatch } from '../../lib/train/rollouts.js';
import { headEngine } from '../../lib/train/head-engine.js';
import { GrpoTrainer } from '../../lib/train/trainer.js';
import type { HeadGraphs } from '../../lib/train/graph/head-graphs.js';
import { clipFactor, resolveOptimizer } from '../../lib/train/optimizer.js';
import { mulberry32 } from '../../lib/math/random.js';
import type { OnnxPolicy } from '../../lib/onnx.js';

export interface StepTiming {
  /** Completion tokens in the batch. */
  tokens: number;
  /** Median of `repeats` first updates on fresh batches: frozen forward + adapter update. */
  firstMs: number;
  /** Median of further updates on the same batch: the adapter's part only. */
  againMs: number;
}

export async function measureTrainStep(policy: OnnxPolicy, options: { groups: number; groupSize: number; newTokens: number; prompt: string; repeats: number }): Promise<StepTiming> {
  const trainer = new GrpoTrainer(headEngine(policy), {}, { numGenerations: options.groupSize });
  try {
    const groups = [];
    const prompts = [];
    for (let g = 0; g < options.groups; g++) {
      const prompt = { prompt: `${options.prompt} (${g})` };
      const result = await policy.generateGroup({ ...prompt, groupSize: options.groupSize, maxNewTokens: options.newTokens, seed: g });
      groups.push({ completions: result.completions, rewards: result.completions.map((_, i) => i % 3) });
      prompts.push(prompt);
    }
    const first: number[] = [];
    const again: number[] = [];
    let tokens = 0;
    for (let i = 0; i < options.repeats; i++) {
      // A new batch object each time: its frozen-model states are not kept yet.
      const batch = groupRolloutBatch(groups);
      tokens = tokenLayout(batch).count;
      let t0 = performance.now();
      await trainer.trainStep(batch, prompts);
      first.push(performance.now() - t0);
      t0 = performance.now();
      await trainer.trainStep(batch, prompts);
      again.push(performance.now() - t0);
    }
    return { tokens, firstMs: median(first), againMs: median(again) };
  } finally {
    trainer.dispose();
  }
}

export interface EnginePhases {
  forwardMs: number;
  backwardMs: number;
  stepMs: number;
  totalMs: number;
  /** Bytes of kept token states (z and h, float32). */
  stateBytes: number;
}

/** Phases of the adapter's update on `tokens` random token states; medians of `repeats`. */
export async function measureEngine(engine: HeadGraphs, tokens: number, repeats: number): Promise<EnginePhases> {
  const { hiddenSize: d, vocabSize: v } = engine.shape;
  const random = mulberry32(7);
  const z = Float32Array.from({ length: tokens * v }, () => (random() - 0.5) * 8);
  const h = Float32Array.from({ length: tokens * d }, () => random() - 0.5);
  await engine.writeStates(z, h);
  // One row of `tokens` tokens with its reward group: what the objective needs to form a batch.
  const groupSize = 2;
  const width = tokens / groupSize;
  const outputs = Array.from({ length: groupSize }, () => Array.from({ length: width }, () => Math.floor(random() * v)));
  const batch = groupRolloutBatch([{ completions: outputs.map((ids) => ({ tokenIds: ids, logprobs: ids.map(() => -Math.log(v)) })), rewards: [0, 1] }]);
  const layout = tokenLayout(batch);
  const optimizer = resolveOptimizer();
  const times = { forward: [] as number[], backward: [] as number[], step: [] as number[] };
  for (let i = 0; i < repeats + 1; i++) {
    const t0 = performance.now();
    const stats = await engine.forward(layout.targets, 1);
    const t1 = performance.now();
    // The objective is the trainer's host code, not the engine's: left out of the phases.
    const objective = grpoObjective(batch, layout, stats, { beta: 0.01, entropyCoef: 0.01 });
    const t2 = performance.now();
    const norm = await engine.backward(layout.targets, objective.dLogp, objective.dEntropy, 1);
    const t3 = performance.now();
    await engine.step(optimizer, clipFactor(norm, optimizer.maxGradNorm));
    await engine.read(); // the update has landed once its result can be read
    const t4 = performance.now();
    if (i === 0) continue; // warm-up: pipelines compile, buffers are allocated
    times.forward.push(t1 - t0);
    times.backward.push(t3 - t2);
    times.step.push(t4 - t3);
  }
  const forwardMs = median(times.forward);
  const backwardMs = median(times.backward);
  const stepMs = median(times.step);
  return { forwardMs, backwardMs, stepMs, totalMs: forwardMs + backwardMs + stepMs, stateBytes: tokens * (v + d) * 4 };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
