/**
 * Supervised pretraining on the full-parameter engine (lib/train/decoder-engine.ts): each update averages, over a
 * batch of examples, the mean negative log-likelihood of each reply's tokens (dlogp = -1 / (N B)
 * on each of the N reply tokens), then AdamW with global clipping under a warmup + cosine rate.
 * The gradients are computed on worker threads (parallel.ts), each running the engine's forward
 * and backward on its shard; the engine's AdamW update (DecoderMoments) runs here, on the shared
 * weights, while the workers wait.
 */
import { clipFactor, globalNorm, resolveOptimizer } from '../../lib/grad/optimizer.js';
import { decoderTensors } from '../../lib/lora/full-grad.js';
import { DecoderMoments } from '../../lib/train/decoder-engine.js';
import type { DecoderWeights } from '../../lib/lora/weights.js';
import { learningRate, type PretrainConfig } from './config.js';
import type { Example } from './corpus.js';
import { GradientPool } from './parallel.js';

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
  /** Worker threads the gradients were computed on. */
  workers: number;
  finalLoss: number;
}

export async function pretrain(weights: DecoderWeights, corpus: readonly Example[], config: PretrainConfig, onLog: (log: TrainLog) => void): Promise<TrainResult> {
  const optimizer = resolveOptimizer({ lr: config.lr, weightDecay: config.weightDecay, maxGradNorm: config.maxGradNorm });
  const moments = new DecoderMoments(weights);
  const pool = new GradientPool(weights, config.workers);
  const started = performance.now();
  let rows = 0;
  let recent = 0;
  let recentCount = 0;
  let finalLoss = NaN;
  try {
    for (let step = 0; step < config.steps; step++) {
      const batch = Array.from({ length: config.batch }, (_, b) => corpus[(step * config.batch + b) % corpus.length]);
      const { grad, loss, rows: batchRows } = await pool.gradient(batch);
      rows += batchRows;
      const lr = learningRate(config, step);
      const gradNorm = globalNorm(decoderTensors(grad));
      if (!Number.isFinite(gradNorm)) throw new Error(`Step ${step + 1}: the gradient is not finite; the weights are unchanged.`);
      moments.apply(weights, grad, clipFactor(gradNorm, optimizer.maxGradNorm), { ...optimizer, lr });
      recent += loss;
      recentCount++;
      finalLoss = loss;
      if ((step + 1) % 25 === 0 || step === config.steps - 1) {
        onLog({ step: step + 1, loss: recent / recentCount, lr, gradNorm, rows, seconds: (performance.now() - started) / 1000 });
        recent = 0;
        recentCount = 0;
      }
    }
  } finally {
    await pool.close();
  }
  return { rows, seconds: (performance.now() - started) / 1000, workers: config.workers, finalLoss };
}
