/**
 * Data parallelism over worker threads for pretraining: the weights live in SharedArrayBuffers
 * that every worker reads; a batch is cut into one contiguous shard per worker, and the shards'
 * gradients are summed in worker order. The sum does not depend on which worker finishes first,
 * so a run is reproducible for a given worker count (the count is part of the recipe).
 */
import { Worker } from 'node:worker_threads';
import { decoderTensors, zerosLikeDecoder } from '../../lib/lora/full-grad.js';
import type { DecoderWeights } from '../../lib/lora/weights.js';
import type { Example } from './corpus.js';

export interface ShardRequest {
  examples: Example[];
  /** Each example's weight in the batch loss (1 / batch size). */
  scale: number;
}

export interface ShardResult {
  tensors: Float32Array[];
  loss: number;
  rows: number;
}

/** The same weights with every tensor moved into shared memory (the arrays are replaced in place). */
export function shareWeights(weights: DecoderWeights): DecoderWeights {
  const share = (a: Float32Array) => {
    const shared = new Float32Array(new SharedArrayBuffer(a.byteLength));
    shared.set(a);
    return shared;
  };
  return {
    shape: weights.shape,
    embedding: share(weights.embedding),
    layers: weights.layers.map((l) => ({
      ...l,
      inputNorm: share(l.inputNorm),
      postNorm: share(l.postNorm),
      ...(l.qNorm ? { qNorm: share(l.qNorm) } : {}),
      ...(l.kNorm ? { kNorm: share(l.kNorm) } : {}),
      q_proj: { ...l.q_proj, weight: share(l.q_proj.weight as Float32Array) },
      k_proj: { ...l.k_proj, weight: share(l.k_proj.weight as Float32Array) },
      v_proj: { ...l.v_proj, weight: share(l.v_proj.weight as Float32Array) },
      o_proj: { ...l.o_proj, weight: share(l.o_proj.weight as Float32Array) },
      gate_proj: { ...l.gate_proj, weight: share(l.gate_proj.weight as Float32Array) },
      up_proj: { ...l.up_proj, weight: share(l.up_proj.weight as Float32Array) },
      down_proj: { ...l.down_proj, weight: share(l.down_proj.weight as Float32Array) },
    })),
    finalNorm: share(weights.finalNorm),
    ...(weights.lmHead ? { lmHead: share(weights.lmHead) } : {}),
  };
}

export class GradientPool {
  private readonly workers: Worker[];
  private readonly pending: Array<{ resolve: (r: ShardResult) => void; reject: (e: Error) => void } | undefined>;

  /** `weights` must be shared (shareWeights). */
  constructor(
    private readonly weights: DecoderWeights,
    count: number,
  ) {
    const entry = new URL('./worker.ts', import.meta.url).href;
    this.pending = new Array(count).fill(undefined);
    this.workers = Array.from({ length: count }, (_, w) => {
      const worker = new Worker(new URL('./worker-boot.mjs', import.meta.url), { workerData: { entry, weights } });
      worker.on('message', (r: ShardResult) => this.settle(w)?.resolve(r));
      worker.on('error', (e) => this.settle(w)?.reject(e));
      return worker;
    });
  }

  private settle(w: number) {
    const p = this.pending[w];
    this.pending[w] = undefined;
    return p;
  }

  /** The batch's summed gradient (in the weights' layout), mean loss and rows. */
  async gradient(batch: readonly Example[]): Promise<{ grad: DecoderWeights; loss: number; rows: number }> {
    const n = this.workers.length;
    const results = await Promise.all(
      this.workers.map(
        (worker, w) =>
          new Promise<ShardResult>((resolve, reject) => {
            this.pending[w] = { resolve, reject };
            const shard = batch.slice(Math.floor((w * batch.length) / n), Math.floor(((w + 1) * batch.length) / n));
            worker.postMessage({ examples: shard, scale: 1 / batch.length } satisfies ShardRequest);
          }),
      ),
    );
    const grad = zerosLikeDecoder(this.weights);
    const sums = decoderTensors(grad);
    let loss = 0;
    let rows = 0;
    for (const r of results) {
      r.tensors.forEach((t, k) => {
        const sum = sums[k];
        for (let i = 0; i < t.length; i++) sum[i] += t[i];
      });
      loss += r.loss;
      rows += r.rows;
    }
    return { grad, loss, rows };
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
