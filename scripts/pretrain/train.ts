/**
 * Supervised pretraining on the engine's full-parameter backward: each update averages, over a
 * batch of examples, the mean negative log-likelihood of each reply's tokens (dlogp = -1 / (N B)
 * on each of the N reply tokens), then AdamW with global clipping under a warmup + cosine rate.
 */
import { decoderGroupForward, DecoderOptimizer, zerosLikeDecoder } from '../../lib/lora/full-grad.js';
import type { DecoderWeights } from '../../lib/lora/weights.js';
import { learningRate, type PretrainConfig } from './config.js';
import type { Example } from './corpus.js';

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
  cpuSeconds: number;
  finalLoss: number;
}

export function pretrain(weights: DecoderWeights, corpus: readonly Example[], config: PretrainConfig, onLog: (log: TrainLog) => void): TrainResult {
  const optimizer = new DecoderOptimizer(weights, { lr: config.lr, weightDecay: config.weightDecay, maxGradNorm: config.maxGradNorm });
  const started = performance.now();
  const cpuStart = process.cpuUsage();
  let rows = 0;
  let at = 0;
  let recent = 0;
  let recentCount = 0;
  let finalLoss = NaN;
  for (let step = 0; step < config.steps; step++) {
    const grad = zerosLikeDecoder(weights);
    let loss = 0;
    for (let b = 0; b < config.batch; b++) {
      const example = corpus[at++ % corpus.length];
      const pass = decoderGroupForward(weights, { promptIds: example.promptIds, completions: [example.replyIds] });
      const n = example.replyIds.length;
      loss -= pass.logprobs[0].reduce((s, lp) => s + lp, 0) / n / config.batch;
      pass.backward([example.replyIds.map(() => -1 / (n * config.batch))], grad);
      rows += example.promptIds.length + n;
    }
    const lr = learningRate(config, step);
    const { gradNorm } = optimizer.update(weights, grad, lr);
    recent += loss;
    recentCount++;
    finalLoss = loss;
    if ((step + 1) % 25 === 0 || step === config.steps - 1) {
      onLog({ step: step + 1, loss: recent / recentCount, lr, gradNorm, rows, seconds: (performance.now() - started) / 1000 });
      recent = 0;
      recentCount = 0;
    }
  }
  const cpu = process.cpuUsage(cpuStart);
  return { rows, seconds: (performance.now() - started) / 1000, cpuSeconds: (cpu.user + cpu.system) / 1e6, finalLoss };
}
