/**
 * The `lora` method on onnxruntime's own kernels (engine 'onnxruntime'), on the bundled model: the
 * training graphs run in the policy's onnxruntime and the sampler follows the adapter as graph
 * inputs. The engine is stored with the run; a run stopped mid-step and resumed ends bit for bit
 * as the uninterrupted one (same engine, same machine); and every update stores the log-prob
 * drift between the sampling pass and the training forward, near zero before the first update on
 * a step's rollouts and clearly not after it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loraGrpo, resumeLoraGrpo, type LoraEvent, type LoraResult } from '../../lib/grad.js';
import { MemoryStore, type LoraRunConfig, type Store } from '../../lib/index.js';
import { digits } from '../../lib/tasks/index.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import type { LoraStepPayload } from '../../lib/index.js';
import { TINY_DIR } from '../onnx/fixtures.js';

let policy: OnnxPolicy;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: TINY_DIR });
});
afterAll(() => policy?.dispose());

const shape = { dataset: digits.dataset({ size: 3, seed: 7 }), rewards: digits.rewards, groupSize: 4, batchSize: 1, maxNewTokens: 5, lora: { r: 2, alpha: 4 }, optimizer: { lr: 0.02 }, engine: 'onnxruntime' as const };

function fingerprint(result: LoraResult): string {
  return JSON.stringify({ layers: result.adapter.layers, updates: result.adapter.updates, state: result.trainer.engine.optimizerState });
}

async function drain(run: AsyncIterable<LoraEvent>, stop?: (event: LoraEvent) => boolean, controller?: AbortController): Promise<LoraEvent[]> {
  const events: LoraEvent[] = [];
  for await (const event of run) {
    events.push(event);
    if (stop?.(event)) controller?.abort();
  }
  return events;
}

describe("loraGrpo on engine 'onnxruntime'", () => {
  it('trains on the graph engine, stores the engine, and resumes bit for bit after a stop mid-step', async () => {
    const reference = loraGrpo({ ...shape, policy, store: new MemoryStore(), runId: 'reference' });
    const referenceResult = await reference.result();
    expect(referenceResult).toMatchObject({ status: 'completed', stepsCompleted: 3 });
    expect(referenceResult.trainer.engine.backend).toBe('onnxruntime');
    const moved = Math.max(...referenceResult.trainer.engine.adapter.layers.flatMap((layer) => Object.values(layer).flatMap((p) => Array.from(p.B, Math.abs))));
    expect(moved).toBeGreaterThan(1e-4);
    const want = fingerprint(referenceResult);
    referenceResult.trainer.dispose();

    const store: Store = new MemoryStore();
    const controller = new AbortController();
    const stopped = loraGrpo({ ...shape, policy, store, runId: 'stopped', signal: controller.signal });
    await drain(stopped, (e) => e.type === 'item-end' && e.step === 2, controller);
    const stoppedResult = await stopped.result();
    expect(stoppedResult).toMatchObject({ status: 'aborted', stepsCompleted: 1 });
    stoppedResult.trainer.dispose();
    expect(((await store.getRun('stopped'))!.config as LoraRunConfig).engine).toBe('onnxruntime');

    const resumed = resumeLoraGrpo('stopped', { policy, rewards: digits.rewards, store });
    await drain(resumed);
    const resumedResult = await resumed.result();
    expect(resumedResult).toMatchObject({ status: 'completed', stepsCompleted: 3 });
    expect(fingerprint(resumedResult)).toBe(want);
    resumedResult.trainer.dispose();
  }, 120_000);

  it('stores the sampler-to-trainer log-prob drift of every update and emits it with the train event', async () => {
    const store = new MemoryStore();
    const run = loraGrpo({ ...shape, dataset: shape.dataset.slice(0, 2), numIterations: 2, policy, store, runId: 'drift' });
    const events = await drain(run);
    (await run.result()).trainer.dispose();
    const trains = events.flatMap((e) => (e.type === 'train' ? [e] : []));
    expect(trains).toHaveLength(4);
    for (const step of [1, 2]) {
      const record = (await store.getStep('drift', step))!;
      const [first, second] = (record.payload as LoraStepPayload).training;
      const emitted = trains.filter((e) => e.step === step);
      expect(first.logprobDrift).toEqual(emitted[0].metrics.logprobDrift);
      expect(second.logprobDrift).toEqual(emitted[1].metrics.logprobDrift);
      // Before the first update the sampler and the trainer score the same adapter on onnxruntime.
      expect(first.logprobDrift!.max).toBeLessThan(1e-4);
      expect(first.logprobDrift!.mean).toBeLessThanOrEqual(first.logprobDrift!.max);
      // After it, the rollouts are off policy by the update: the measure sees it.
      expect(second.logprobDrift!.max).toBeGreaterThan(1e-3);
    }
  }, 120_000);
});
