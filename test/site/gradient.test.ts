/**
 * The playground's gradient and LoRA runs as they cross the worker boundary, in Node: the page side
 * (`workerGradientRun`) and the worker side (`serveGradientRuns`) joined by a stand-in for the
 * Worker, with real MessagePorts (so every event is structured-cloned, as in the browser), the
 * bundled model loaded with its hidden state (onnxruntime-node) and a MemoryStore. A run pulls
 * every event, streams its groups, leaves the base model behind; a cancelled run resumes to the
 * end; failures arrive as errors; and the playground's view functions read the stored run. A LoRA
 * run trains the same worker's policy, leaves its base weights behind, and its adapter is drawn
 * like the head adapter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore, type WorkerScope } from '../../lib/index.js';
import { digits } from '../../lib/tasks/index.js';
import { payloadOf } from '../../lib/method.js';
import { readAdapterFile, readLoraAdapterFile, type GradientEvent, type LoraEvent } from '../../lib/grad.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { adapterAbout, adapterPoint, adapterShape, adapterTrace, DRIFT_LIMIT, driftNote, driftSeries, updateSeries } from '../../site/lib/adapter-view.js';
import { workerGradientRun, type TrainerWorker } from '../../site/lib/gradient-client.js';
import type { TrainRequest } from '../../site/lib/gradient-protocol.js';
import { serveGradientRuns } from '../../site/lib/gradient-worker.js';
import type { GroupStream } from '../../site/lib/streaming.js';
import { epochRows } from '../../site/lib/view.js';

let policy: OnnxPolicy;
let plain: OnnxPolicy;
beforeAll(async () => {
  const model = await bundledModelPath();
  [policy, plain] = await Promise.all([loadOnnxPolicy({ model, hiddenState: true }), loadOnnxPolicy({ model })]);
});
afterAll(async () => {
  await Promise.all([policy?.dispose(), plain?.dispose()]);
});

/** A worker's message scope and the page's handle on it, in one realm. */
function workerPair(loaded: () => OnnxPolicy | null, store: MemoryStore) {
  const listeners: Array<(event: MessageEvent) => void> = [];
  const scope: WorkerScope = {
    postMessage: () => undefined,
    addEventListener: (_type, listener) => void listeners.push(listener),
  };
  const policyMessages: unknown[] = [];
  const forPolicy = serveGradientRuns(loaded, scope, { openStore: async () => store });
  forPolicy.addEventListener('message', (event) => policyMessages.push(event.data));
  const worker: TrainerWorker = {
    postMessage: (message) => setTimeout(() => listeners.forEach((l) => l({ data: message } as MessageEvent))),
    addEventListener: () => undefined,
    removeEventListener: () => undefined,
  };
  return { worker, policyMessages };
}

const settings = { groupSize: 4, epochs: 1, batchSize: 2, numIterations: 2, maxNewTokens: 8, seed: 3, optimizer: { lr: 0.02 }, head: { rank: 4 } };

function startRequest(runId: string, size = 4): TrainRequest {
  return { kind: 'start', method: 'gradient', runId, dataset: digits.dataset({ size, seed: 3 }), task: 'digits', rewards: [{ name: 'digit_share', weight: 1 }], settings };
}

type Event = GradientEvent | LoraEvent;

async function collect(run: AsyncIterable<Event>, onEvent: (event: Event) => void = () => undefined): Promise<Event[]> {
  const events: Event[] = [];
  for await (const event of run) {
    events.push(event);
    onEvent(event);
  }
  return events;
}

describe('a gradient run in the model worker', () => {
  it('pulls every event across the boundary, streams its groups, and leaves the base model behind', async () => {
    const store = new MemoryStore();
    const { worker, policyMessages } = workerPair(() => policy, store);
    const streams: Array<GroupStream | null> = [];
    const run = workerGradientRun(worker, startRequest('r1'), { signal: new AbortController().signal, onStream: (s) => streams.push(s) });
    expect(run.runId).toBe('r1');
    const events = await collect(run);

    const types = events.map((e) => e.type);
    expect(types[0]).toBe('run-start');
    expect(types.filter((t) => t === 'train')).toHaveLength(4);
    expect(types.filter((t) => t === 'step-end')).toHaveLength(2);
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'completed', stepsCompleted: 2 });
    // Rollouts arrive as plain data (cloned), with their tokens and log-probs.
    const rollouts = events.find((e) => e.type === 'rollouts') as Extract<GradientEvent, { type: 'rollouts' }>;
    expect(rollouts.completions).toHaveLength(4);
    expect(rollouts.completions[0].tokenIds.length).toBe(rollouts.completions[0].logprobs.length);
    // Each group was announced empty, then cleared; the training messages never reached the policy's listener.
    expect(streams.filter((s) => s === null)).toHaveLength(4);
    expect(streams.find((s) => s !== null)).toMatchObject({ kind: 'group', rows: ['', '', '', ''] });
    expect(policyMessages).toEqual([]);

    const bundle = await store.readBundle('r1');
    expect(bundle.run).toMatchObject({ kind: 'gradient', status: 'completed', config: { task: 'digits', numIterations: 2, adapter: { rank: 4 } } });
    expect(bundle.adapter?.step).toBe(2);
    // The trainer was disposed: the policy samples from the base model again.
    expect(policy.head!.adapter).toBeUndefined();

    // What the panels draw from it.
    const series = updateSeries(bundle);
    expect(series.x).toEqual([0.5, 1, 1.5, 2]);
    expect(series.loss).toEqual(bundle.steps.flatMap((s) => payloadOf(s, 'gradient')!.training.map((m) => m.loss)));
    // Each step's first update ran the parameters that sampled; the head adapter's trainer runs its
    // graphs on onnxruntime beside the sampler's session, so the gap is float32 rounding, not zero.
    const drift = driftSeries(bundle);
    expect(drift.step).toEqual([1, 2]);
    expect(drift.mean.every((m) => m !== null && m < DRIFT_LIMIT / 100)).toBe(true);
    expect(driftNote(drift)).toMatch(/^On policy: sampler and trainer (give the same log-probs, token for token|agree to \d\.\de-\d+ nats per token at most), over 2 steps\.$/);
    expect(driftNote({ step: [1], mean: [0], max: [0] })).toBe('On policy: sampler and trainer give the same log-probs, token for token, over 1 step.');
    expect(driftNote({ step: [1, 2], mean: [1e-7, 2e-7], max: [4e-7, 9e-7] })).toBe('On policy: sampler and trainer agree to 9.0e-7 nats per token at most, over 2 steps.');
    const stale = { step: [1, 2, 3], mean: [1e-7, 10 * DRIFT_LIMIT, null], max: [3e-7, 0.5, null] };
    expect(driftNote(stale)).toBe('Step 2 drifted: the trainer\'s log-probs differ from the sampler\'s by 1.0e-2 nats per token on average (max 5.0e-1), so the updates are not on the policy that sampled.');
    expect(driftNote({ step: [1], mean: [null], max: [null] })).toBeNull();
    const point = adapterPoint(bundle.adapter!);
    const b = readAdapterFile(bundle.adapter!.adapter).b;
    expect(point).toMatchObject({ step: 2, updates: 4 });
    expect(point.normB).toBeCloseTo(Math.hypot(...b), 12);
    expect(point.normB).toBeGreaterThan(0);
    expect(adapterTrace([{ ...point, step: 1, normB: 0.1 }, { ...point, normB: 99 }], point)).toEqual([{ ...point, step: 1, normB: 0.1 }, point]);
    expect(adapterShape(bundle.run.kind === 'gradient' ? bundle.run.config : (undefined as never))).toMatchObject({
      rank: 4,
      parameters: 4 * (policy.head!.hiddenSize + policy.head!.vocabSize),
    });
    expect(epochRows(bundle)[0].lastUpdate).toEqual(payloadOf(bundle.steps[1], 'gradient')!.training.at(-1));
  });

  it('cancels in the worker when the signal aborts, and resumes to the end', async () => {
    const store = new MemoryStore();
    const { worker } = workerPair(() => policy, store);
    const controller = new AbortController();
    const first = await collect(workerGradientRun(worker, startRequest('r2', 8), { signal: controller.signal, onStream: () => undefined }), (event) => {
      if (event.type === 'step-end' && event.step === 1) controller.abort();
    });
    expect(first.at(-1)).toMatchObject({ type: 'run-end', status: 'aborted', stepsCompleted: 1 });
    expect((await store.getRun('r2'))?.status).toBe('aborted');
    expect((await store.getAdapter('r2'))?.step).toBe(1);

    const resume: TrainRequest = { kind: 'resume', method: 'gradient', runId: 'r2', task: 'digits', rewards: [{ name: 'digit_share', weight: 1 }] };
    const second = await collect(workerGradientRun(worker, resume, { signal: new AbortController().signal, onStream: () => undefined }));
    expect(second[0]).toMatchObject({ type: 'run-start', resumed: true });
    expect(second.filter((e) => e.type === 'step-end').map((e) => (e as { step: number }).step)).toEqual([2, 3, 4]);
    expect(second.at(-1)).toMatchObject({ type: 'run-end', status: 'completed', stepsCompleted: 4 });
    expect((await store.getAdapter('r2'))?.optimizer.updates).toBe(8);
  });

  it('reports failures as errors with their message and name', async () => {
    const store = new MemoryStore();
    const untrainable = workerPair(() => plain, store);
    const run = workerGradientRun(untrainable.worker, startRequest('r3'), { signal: new AbortController().signal, onStream: () => undefined });
    await expect(collect(run)).rejects.toMatchObject({ name: 'InvalidInputError', message: expect.stringMatching(/hiddenState: true/) });

    const { worker } = workerPair(() => policy, store);
    const missing: TrainRequest = { kind: 'resume', method: 'gradient', runId: 'nope', task: 'digits', rewards: [{ name: 'digit_share', weight: 1 }] };
    await expect(collect(workerGradientRun(worker, missing, { signal: new AbortController().signal, onStream: () => undefined }))).rejects.toThrow(/no run "nope"/);
  });
});

describe('a LoRA run in the model worker', () => {
  it('trains LoRA on every layer of the worker\'s policy, resumes, and leaves the base weights behind', async () => {
    const store = new MemoryStore();
    const { worker } = workerPair(() => policy, store);
    const probe = { prompt: 'Count:', completions: [[10, 11, 12]] };
    const before = await policy.scoreCompletions(probe);
    const lora = { groupSize: 4, epochs: 1, batchSize: 1, numIterations: 1, maxNewTokens: 6, seed: 3, optimizer: { lr: 0.02 }, lora: { r: 2, alpha: 4 } };
    const request: TrainRequest = { kind: 'start', method: 'lora', runId: 'l1', dataset: digits.dataset({ size: 2, seed: 3 }), task: 'digits', rewards: [{ name: 'digit_share', weight: 1 }], settings: lora };
    const controller = new AbortController();
    const first = await collect(workerGradientRun(worker, request, { signal: controller.signal, onStream: () => undefined }), (event) => {
      if (event.type === 'step-end') controller.abort();
    });
    expect(first.at(-1)).toMatchObject({ type: 'run-end', status: 'aborted', stepsCompleted: 1 });
    const end = first.find((e) => e.type === 'step-end') as Extract<LoraEvent, { type: 'step-end' }>;
    expect(end.refreshMs).toBeGreaterThan(0);
    // Stopped: the worker put the base weights back.
    expect((await policy.scoreCompletions(probe)).logprobs).toEqual(before.logprobs);

    const resume: TrainRequest = { kind: 'resume', method: 'lora', runId: 'l1', task: 'digits', rewards: [{ name: 'digit_share', weight: 1 }] };
    const second = await collect(workerGradientRun(worker, resume, { signal: new AbortController().signal, onStream: () => undefined }));
    expect(second.at(-1)).toMatchObject({ type: 'run-end', status: 'completed', stepsCompleted: 2 });
    expect((await policy.scoreCompletions(probe)).logprobs).toEqual(before.logprobs);

    const bundle = await store.readBundle('l1');
    expect(bundle.run).toMatchObject({ kind: 'lora', config: { lora: { r: 2, alpha: 4 } } });
    expect(updateSeries(bundle).loss).toEqual(bundle.steps.flatMap((s) => payloadOf(s, 'lora')!.training.map((m) => m.loss)));
    // The sampler follows the adapter on onnxruntime and the trainer runs its graphs: two sessions
    // of float32 kernels, so the gap is small but need not be zero.
    const drift = driftSeries(bundle);
    expect(drift.mean.every((m) => m !== null && m < DRIFT_LIMIT / 100)).toBe(true);
    expect(driftNote(drift)).toMatch(/^On policy: sampler and trainer (give the same log-probs, token for token|agree to \d\.\de-\d+ nats per token at most), over 2 steps\.$/);
    const point = adapterPoint(bundle.adapter!);
    const pairs = readLoraAdapterFile(bundle.adapter!.adapter).layers.flatMap((layer) => Object.values(layer));
    expect(point).toMatchObject({ step: 2, updates: 2 });
    expect(point.normB).toBeCloseTo(Math.hypot(...pairs.flatMap((p) => Array.from(p.B))), 10);
    expect(point.normB).toBeGreaterThan(0);
    const about = adapterAbout(bundle.run as Extract<typeof bundle.run, { kind: 'lora' }>, bundle.adapter);
    expect(about.parameters).toBe(pairs.reduce((n, p) => n + p.A.length + p.B.length, 0));
    // The worker's policy runs in Node here, where 'auto' trains on onnxruntime's graphs (the
    // policy follows the adapter as graph inputs), and the run says so.
    expect(bundle.run.config).toMatchObject({ engine: 'onnxruntime', backend: 'cpu' });
    expect(about.detail).toMatch(/trained on the CPU, onnxruntime's kernels$/);
    // A run stored before the backend was kept names the kernels only.
    const stored = bundle.run as Extract<typeof bundle.run, { kind: 'lora' }>;
    const { backend: _backend, ...older } = stored.config;
    expect(adapterAbout({ ...stored, config: older }, undefined).detail).toMatch(/trained on onnxruntime's kernels$/);
    expect(about.download).toBe('Download adapter (PEFT zip)');
  });
});
