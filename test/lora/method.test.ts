/**
 * The `lora` method on the bundled model: the sampler follows the adapter (a step's rollouts carry
 * the log-probs of the adapter as the previous step left it, to 1e-5), every step commits a LoRA
 * checkpoint and reports what the refresh cost, the options are checked and stored as the
 * gradient method's are, a run starts from an adapter handed back through PEFT's files, and a
 * bundle whose checkpoint is not a LoRA one is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportPeftAdapter, importPeftAdapter, loraGrpo, resumeLoraGrpo, type LoraAdapterFile, type LoraEvent } from '../../lib/grad.js';
import { readLoraCheckpoint } from '../../lib/lora/format.js';
import { exportRun, importRun, MemoryStore, type LoraRunConfig, type RunBundle } from '../../lib/index.js';
import { digits } from '../../lib/tasks/index.js';
import { readDecoderWeights } from '../../lib/weights/read-onnx.js';
import type { DecoderWeights } from '../../lib/weights/decoder.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { TINY_DIR } from '../onnx/fixtures.js';
import { graphLogprobs } from './graph-logprobs.js';

let policy: OnnxPolicy;
let weights: DecoderWeights;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: TINY_DIR });
  const { graph, externalData, config } = await policy.modelGraph();
  weights = await readDecoderWeights(graph, { config, externalData });
});
afterAll(() => policy?.dispose());

const shape = { dataset: digits.dataset({ size: 2, seed: 5 }), rewards: digits.rewards, groupSize: 4, batchSize: 1, maxNewTokens: 5, lora: { r: 2, alpha: 4 }, optimizer: { lr: 0.02 } };

describe('loraGrpo', () => {
  it('samples each step from the adapter the step before left, and commits it with the step', async () => {
    const store = new MemoryStore();
    const run = loraGrpo({ ...shape, policy, store, runId: 'follows' });
    const afterStep: Record<number, ReturnType<typeof readLoraCheckpoint>> = {};
    const events: LoraEvent[] = [];
    for await (const event of run) {
      events.push(event);
      if (event.type === 'step-end') afterStep[event.step] = readLoraCheckpoint(await store.getAdapter('follows'));
    }
    const result = await run.result();
    expect(result).toMatchObject({ status: 'completed', stepsCompleted: 2 });
    expect(events.filter((e) => e.type === 'train')).toHaveLength(2);
    for (const end of events.filter((e) => e.type === 'step-end')) expect(end.refreshMs).toBeGreaterThan(0);
    expect(afterStep[1].step).toBe(1);
    expect(afterStep[2].state.step).toBe(2);
    // The first update moved B away from zero.
    const moved = Math.max(...afterStep[1].adapter.layers.flatMap((layer) => Object.values(layer).flatMap((p) => Array.from(p.B, Math.abs))));
    expect(moved).toBeGreaterThan(1e-4);

    const step2 = (await store.getStep('follows', 2))!;
    expect(step2.payload).toMatchObject({ kind: 'lora' });
    const item = step2.items[0];
    const promptIds = policy.promptIds(item.prompt);
    let differs = 0;
    const group = { promptIds, completions: item.rollouts.map((r) => r.tokenIds) };
    const adapted = await graphLogprobs(weights, afterStep[1].adapter, group);
    const base = await policy.scoreCompletions({ ...item.prompt, completions: group.completions });
    item.rollouts.forEach((rollout, c) => {
      rollout.logprobs.forEach((lp, t) => {
        expect(Math.abs(lp - adapted[c][t])).toBeLessThan(1e-5);
        differs = Math.max(differs, Math.abs(lp - base.logprobs[c][t]));
      });
    });
    expect(differs).toBeGreaterThan(1e-4);
    // The result's adapter is the last checkpoint's.
    expect(result.adapter.layers).toEqual(((await store.getAdapter('follows'))!.adapter as LoraAdapterFile).layers);
  });

  it('checks its options synchronously and stores them resolved', () => {
    expect(() => loraGrpo({ ...shape, policy, lora: { r: 0 } })).toThrow(expect.objectContaining({ code: 'InvalidInput', argument: 'lora.r' }));
    expect(() => loraGrpo({ ...shape, policy, lora: { targetModules: ['qkv_proj' as never] } })).toThrow(expect.objectContaining({ code: 'InvalidInput' }));
    expect(() => loraGrpo({ ...shape, policy, loss: { lossType: 'nope' as never } })).toThrow(expect.objectContaining({ code: 'InvalidInput' }));
    expect(() => loraGrpo({ ...shape, policy, optimizer: { lr: -1 } })).toThrow(expect.objectContaining({ code: 'InvalidInput' }));
    const sampler = { info: policy.info, generateGroup: policy.generateGroup.bind(policy), dispose: async () => undefined };
    expect(() => loraGrpo({ ...shape, policy: sampler as never })).toThrow(expect.objectContaining({ code: 'InvalidInput', argument: 'policy' }));
    expect(() => loraGrpo({ ...shape, policy, engine: 'gpu' as never })).toThrow(expect.objectContaining({ code: 'InvalidInput', argument: 'engine' }));
    // The removed engines are refused by name, before anything is stored.
    for (const engine of ['cpu', 'webgpu']) {
      expect(() => loraGrpo({ ...shape, policy, engine: engine as never })).toThrow(expect.objectContaining({ code: 'InvalidInput', argument: 'engine', message: expect.stringMatching(/was removed/) }));
    }
  });

  it("trains on onnxruntime's kernels, and resumes a run stored by the removed 'cpu' or 'webgpu' engine on them", async () => {
    const options = { ...shape, dataset: digits.dataset({ size: 2, seed: 6 }), runId: 'engine' };
    const whole = new MemoryStore();
    const through = await loraGrpo({ ...options, policy, store: whole }).result();
    through.trainer.dispose();
    expect(((await whole.getRun('engine'))!.config as LoraRunConfig).engine).toBe('onnxruntime');

    const cut = new MemoryStore();
    const controller = new AbortController();
    const first = loraGrpo({ ...options, policy, store: cut, signal: controller.signal });
    for await (const event of first) if (event.type === 'step-end' && event.step === 1) controller.abort();
    (await first.result()).trainer.dispose();
    const bundle = (await exportRun(cut, 'engine')) as RunBundle;
    expect(bundle.steps).toHaveLength(1);
    // The same stored step, as the removed engines' runs (and runs from before the option) name their engine.
    for (const engine of ['cpu', 'webgpu', undefined]) {
      const config = bundle.run.config as { engine?: string };
      if (engine) config.engine = engine;
      else delete config.engine;
      const store = new MemoryStore();
      await importRun(store, JSON.stringify(bundle));
      const resumed = await resumeLoraGrpo('engine', { policy, rewards: shape.rewards, store }).result();
      expect([engine, resumed.status, resumed.stepsCompleted]).toEqual([engine, 'completed', 2]);
      // One engine against itself: the resume ends bit for bit as the uninterrupted run.
      expect(resumed.adapter.layers).toEqual(through.adapter.layers);
      resumed.trainer.dispose();
    }

    // A stored engine other than the three is refused on import.
    (bundle.run.config as { engine: string }).engine = 'tpu';
    await expect(importRun(new MemoryStore(), JSON.stringify(bundle))).rejects.toMatchObject({ code: 'InvalidInput' });
  });

  it('stores the resolved objective, optimizer and LoRA settings with the run', async () => {
    const store = new MemoryStore();
    const run = loraGrpo({ ...shape, policy, store, runId: 'config', epochs: 1, loss: { lossType: 'grpo', beta: 0.02, maskTruncatedCompletions: true }, optimizer: {} });
    // The run is stored when it starts; leaving at run-start stops it before any sampling.
    for await (const event of run) if (event.type === 'run-start') break;
    const config = (await store.getRun('config'))!.config;
    expect(config).toMatchObject({
      loss: { lossType: 'grpo', beta: 0.02, clipParam: 0.2, entropyCoeff: 0.01, maskTruncatedCompletions: true, scaleRewards: 'group' },
      optimizer: { lr: 2e-3, maxGradNorm: 1 },
      lora: { r: 2, alpha: 4, useRslora: false, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'], seed: 0 },
      engine: 'onnxruntime',
    });
  });

  it('starts from an adapter handed back through PEFT files', async () => {
    const first = await loraGrpo({ ...shape, policy, store: new MemoryStore() }).result();
    const folder = exportPeftAdapter(first.trainer.engine.adapter, { baseModel: 'webgrpo-tiny' });
    const adapter = importPeftAdapter(folder, weights.shape);
    const store = new MemoryStore();
    await loraGrpo({ ...shape, policy, store, runId: 'continued', epochs: 1, initialAdapter: adapter }).result();
    const step1 = (await store.getStep('continued', 1))!;
    const promptIds = policy.promptIds(step1.items[0].prompt);
    const rollouts = step1.items[0].rollouts;
    const ours = await graphLogprobs(weights, adapter, { promptIds, completions: rollouts.map((r) => r.tokenIds) });
    rollouts.forEach((rollout, c) => rollout.logprobs.forEach((lp, t) => expect(Math.abs(lp - ours[c][t])).toBeLessThan(1e-5)));
    expect((await store.getRun('continued'))!.config).toMatchObject({ lora: { r: 2, alpha: 4, initial: true } });

    // Stopped before its first commit, such a run cannot resume: no store holds its starting adapter.
    const early = new MemoryStore();
    for await (const event of loraGrpo({ ...shape, policy, store: early, runId: 'early', initialAdapter: adapter })) if (event.type === 'run-start') break;
    await expect(resumeLoraGrpo('early', { policy, rewards: shape.rewards, store: early }).result()).rejects.toMatchObject({ code: 'InvalidInput', message: expect.stringMatching(/initialAdapter/) });
  });

  it('refuses an import whose checkpoint is not a LoRA adapter, and keeps the store as it was', async () => {
    const store = new MemoryStore();
    await loraGrpo({ ...shape, policy, store, runId: 'source', epochs: 1 }).result();
    const text = JSON.stringify(await exportRun(store, 'source'));
    const broken = JSON.parse(text) as RunBundle;
    // A head adapter's checkpoint in a lora run's place.
    broken.adapter!.adapter = { format: 'webgrpo.adapter', version: 1, target: 'lm_head' } as never;
    const other = new MemoryStore();
    await expect(importRun(other, JSON.stringify(broken))).rejects.toMatchObject({ code: 'InvalidInput' });
    expect(await other.listRuns()).toEqual([]);
    await importRun(other, text);
    expect((await other.getAdapter('source'))?.step).toBe(2);
  });
});
