/**
 * A gradient worker of the data-parallel pretraining: it reads the shared weights (SharedArrayBuffer,
 * updated in place by the main thread between steps) and answers each shard of a batch with the
 * gradient of its examples' loss, summed in order, and that loss.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { decoderTensors } from '../../lib/lora/full-grad.js';
import type { DecoderWeights } from '../../lib/lora/weights.js';
import { DecoderEngine } from '../../lib/train/decoder-engine.js';
import type { ShardRequest, ShardResult } from './parallel.js';

const weights = (workerData as { weights: DecoderWeights }).weights;
// Forward and backward only: the update runs on the main thread, on the shared weights.
const engine = new DecoderEngine(weights);

parentPort!.on('message', async ({ examples, scale }: ShardRequest) => {
  const stats = await engine.forward(examples.map((e) => ({ prompt: e.promptIds, completions: [e.replyIds] })), { temperature: 1, reference: false });
  const dLogp = new Float64Array(stats.logps.length);
  let loss = 0;
  let rows = 0;
  let slot = 0;
  for (const example of examples) {
    const n = example.replyIds.length;
    loss -= (stats.logps.subarray(slot, slot + n).reduce((s, lp) => s + lp, 0) / n) * scale;
    dLogp.fill(-scale / n, slot, slot + n);
    slot += n;
    rows += example.promptIds.length + n;
  }
  await engine.backward(dLogp, new Float64Array(dLogp.length));
  const tensors = decoderTensors(engine.gradient()!);
  const result: ShardResult = { tensors, loss, rows };
  parentPort!.postMessage(result, tensors.map((t) => t.buffer as ArrayBuffer));
});
