/**
 * A gradient worker of the data-parallel pretraining: it reads the shared weights (SharedArrayBuffer,
 * updated in place by the main thread between steps) and answers each shard of a batch with the
 * gradient of its examples' loss, summed in order, and that loss.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { decoderGroupForward, decoderTensors, zerosLikeDecoder } from '../../lib/lora/full-grad.js';
import type { DecoderWeights } from '../../lib/lora/weights.js';
import type { ShardRequest, ShardResult } from './parallel.js';

const weights = (workerData as { weights: DecoderWeights }).weights;

parentPort!.on('message', ({ examples, scale }: ShardRequest) => {
  const grad = zerosLikeDecoder(weights);
  let loss = 0;
  let rows = 0;
  for (const example of examples) {
    const pass = decoderGroupForward(weights, { promptIds: example.promptIds, completions: [example.replyIds] });
    const n = example.replyIds.length;
    loss -= (pass.logprobs[0].reduce((s, lp) => s + lp, 0) / n) * scale;
    pass.backward([example.replyIds.map(() => -scale / n)], grad);
    rows += example.promptIds.length + n;
  }
  const tensors = decoderTensors(grad);
  const result: ShardResult = { tensors, loss, rows };
  parentPort!.postMessage(result, tensors.map((t) => t.buffer as ArrayBuffer));
});
