/**
 * gradientGrpo on the bundled model in Node (onnxruntime-node, the CPU engine): it learns the
 * token-level tasks for real, from a seed and on a task the defaults were not tuned on alike; a
 * run killed mid-step and resumed ends with exactly the adapter of an uninterrupted run; events
 * follow the training-free loop's shape; bad input fails early with typed errors.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gradientGrpo, resumeGradientGrpo, type GradientEvent, type GradientGrpoOptions } from '../../lib/grad.js';
import { InvalidInputError, MemoryStore } from '../../lib/index.js';
import { getTask, type Task } from '../../lib/tasks.js';
import { digits, shout } from '../../lib/tasks/index.js';
import { openFileStore } from '../../lib/node.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';

let policy: OnnxPolicy;
let plain: OnnxPolicy;
const dirs: string[] = [];
beforeAll(async () => {
  const model = await bundledModelPath();
  [policy, plain] = await Promise.all([loadOnnxPolicy({ model, hiddenState: true }), loadOnnxPolicy({ model })]);
});
afterAll(async () => {
  await Promise.all([policy?.dispose(), plain?.dispose()]);
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

function options(task: Task, seed: number, extra: Partial<GradientGrpoOptions> = {}): GradientGrpoOptions {
  return {
    policy,
    dataset: task.dataset({ size: 24, seed }),
    rewards: task.rewards,
    task: task.name,
    groupSize: 8,
    batchSize: 2,
    maxNewTokens: 16,
    seed,
    ...extra,
  };
}

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

// Two token-level tasks, two seeds each: the default settings learn without a lucky seed (the
// mean reward of the last 3 of 12 steps is 0.3 above the first 3's and above 0.6). Any other task
// and seed run with WEBGRPO_GRAD_TASK=<built-in task> WEBGRPO_GRAD_SEED=<n>, held to a gain of
// 0.1 of the rewards' total weight: the random character-level model learns token-level rewards
// (digits, shout, and keywords' one_sentence), not exact answers (arithmetic, json-format).
const cases: Array<[string, number, Task, { gain: number; end: number }]> = [
  ['digits', 1, digits, { gain: 0.3, end: 0.6 }],
  ['digits', 7, digits, { gain: 0.3, end: 0.6 }],
  ['shout', 2, shout, { gain: 0.3, end: 0.6 }],
  ['shout', 11, shout, { gain: 0.3, end: 0.6 }],
];
if (process.env.WEBGRPO_GRAD_TASK) {
  const task = getTask(process.env.WEBGRPO_GRAD_TASK);
  cases.push([task.name, Number(process.env.WEBGRPO_GRAD_SEED ?? 0), task, { gain: 0.1, end: 0 }]);
}

describe('learning on the bundled model', () => {
  it.each(cases)('%s with seed %i: mean reward after 12 steps clearly above the start', async (_, seed, task, bar) => {
    const run = gradientGrpo(options(task, seed));
    const rewards: number[] = [];
    const losses: number[] = [];
    for await (const event of run) {
      if (event.type === 'step-end') rewards.push(event.stats.meanReward!);
      if (event.type === 'train') losses.push(event.metrics.loss);
    }
    const result = await run.result();
    result.trainer.dispose();
    expect(rewards).toHaveLength(12);
    const start = mean(rewards.slice(0, 3));
    const end = mean(rewards.slice(-3));
    const total = task.rewards.reduce((sum, r) => sum + (r.weight ?? 1), 0);
    expect(end - start, `rewards ${rewards.map((r) => r.toFixed(2)).join(' ')}`).toBeGreaterThan(bar.gain * total);
    expect(end).toBeGreaterThan(bar.end * total);
    expect(losses.every(Number.isFinite)).toBe(true);
  });
});

describe('the loop', () => {
  it('emits the training-free loop\'s event shape, with a train event per update', async () => {
    const events: GradientEvent[] = [];
    const run = gradientGrpo(options(digits, 3, { dataset: digits.dataset({ size: 2, seed: 3 }), numIterations: 2, epochs: 2 }));
    for await (const event of run) events.push(event);
    (await run.result()).trainer.dispose();
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('run-start');
    expect(types.at(-1)).toBe('run-end');
    expect(types.filter((t) => t === 'step-end')).toHaveLength(2);
    expect(types.filter((t) => t === 'epoch-end')).toHaveLength(2);
    const trains = events.filter((e): e is Extract<GradientEvent, { type: 'train' }> => e.type === 'train');
    expect(trains.map((e) => [e.step, e.iteration])).toEqual([[1, 1], [1, 2], [2, 1], [2, 2]]);
    // The second update of a batch sees the ratio move away from 1 (old log-probs are kept).
    expect(trains[0].metrics.clipRatioRegion).toBe(0);
    expect(trains[1].metrics.step).toBe(2);
    const metrics = trains[1].metrics;
    for (const key of ['loss', 'kl', 'entropy', 'rewardMean', 'rewardStd', 'advantageMean', 'advantageStd', 'gradNorm'] as const) {
      expect(Number.isFinite(metrics[key]), key).toBe(true);
    }
    const end = events.at(-1) as Extract<GradientEvent, { type: 'run-end' }>;
    expect(end).toMatchObject({ status: 'completed', stepsCompleted: 2, epochsCompleted: 2, itemsProcessed: 4 });
    expect(end.progress).toMatchObject({ step: 2, totalSteps: 2, itemsDone: 4, totalItems: 4 });
  });

  it('a run aborted mid-step and resumed ends with exactly the adapter of an uninterrupted run', async () => {
    const base = options(digits, 5, { dataset: digits.dataset({ size: 8, seed: 5 }), numIterations: 2 });
    const uninterrupted = await gradientGrpo({ ...base, store: new MemoryStore() }).result();
    const expected = uninterrupted.adapter;
    uninterrupted.trainer.dispose();

    const dir = await mkdtemp(join(tmpdir(), 'webgrpo-grad-'));
    dirs.push(dir);
    const store = await openFileStore(dir);
    const controller = new AbortController();
    const run = gradientGrpo({ ...base, store, runId: 'killed', signal: controller.signal });
    for await (const event of run) {
      // Step 3 of 4: its first item is stored, its second is not.
      if (event.type === 'item-end' && event.step === 3) controller.abort();
    }
    const aborted = await run.result();
    aborted.trainer.dispose();
    expect(aborted.status).toBe('aborted');
    expect(aborted.stepsCompleted).toBe(2);
    expect((await store.getAdapter('killed'))!.step).toBe(2);
    expect(await store.getItemResults('killed', 3)).toHaveLength(1);

    const resumed = resumeGradientGrpo('killed', { policy, rewards: digits.rewards, store: await openFileStore(dir) });
    const reused: boolean[] = [];
    for await (const event of resumed) if (event.type === 'item-end') reused.push(event.reused);
    const done = await resumed.result();
    done.trainer.dispose();
    expect(reused).toEqual([true, false, false, false]);
    expect(done).toMatchObject({ status: 'completed', stepsCompleted: 4 });
    expect(done.adapter.a).toBe(expected.a);
    expect(done.adapter.b).toBe(expected.b);
    expect((await store.getRun('killed'))!.status).toBe('completed');
  });

  it('trains with TRL\'s sampling correction under a top-k filter, keeps the newer objective\'s options with the run, and resumes them exactly', async () => {
    // cispo with the mismatch correction (topK filters the sampler) and an entropy target the
    // random model is under, so the adaptive coefficient moves every update.
    const loss = { lossType: 'cispo' as const, epsilonHigh: 4, adaptiveEntropy: { target: 10, delta: 0.01 } };
    const base = options(digits, 3, { dataset: digits.dataset({ size: 6, seed: 3 }), topK: 20, numIterations: 2, loss });
    const store = new MemoryStore();
    const run = gradientGrpo({ ...base, store, runId: 'corrected' });
    const trains: Array<Extract<GradientEvent, { type: 'train' }>> = [];
    for await (const event of run) if (event.type === 'train') trains.push(event);
    const uninterrupted = await run.result();
    uninterrupted.trainer.dispose();
    const ratio = trains[0].metrics.importanceSamplingRatio!;
    expect(ratio.min).toBeLessThanOrEqual(ratio.mean);
    expect(ratio.mean).toBeLessThanOrEqual(ratio.max);
    expect(ratio.max).toBeLessThanOrEqual(3);
    expect(ratio.mean).toBeLessThan(1); // filtered sampling is more certain than the model: old < sampling log-probs
    const coefs = trains.map((t) => t.metrics.entropyCoef!);
    expect(coefs[coefs.length - 1]).toBeGreaterThan(coefs[0]);
    const stored = (await store.getRun('corrected'))!;
    expect(stored.kind === 'gradient' && stored.config.loss).toMatchObject(loss);
    const step = (await store.getStep('corrected', 1))!;
    expect(step.items[0].rollouts.some((r) => r.sampledLogprobs?.length === r.tokenIds.length)).toBe(true);

    // Stopped after step 2 of 3 and resumed: the stored sampled log-probs and the adaptive
    // coefficient carry the rest of the run to the uninterrupted adapter, bit for bit.
    const controller = new AbortController();
    const resumeStore = new MemoryStore();
    const first = gradientGrpo({ ...base, store: resumeStore, runId: 'resumed', signal: controller.signal });
    for await (const event of first) if (event.type === 'step-end' && event.step === 2) controller.abort();
    (await first.result()).trainer.dispose();
    const resumed = resumeGradientGrpo('resumed', { policy, rewards: digits.rewards, store: resumeStore });
    const done = await resumed.result();
    done.trainer.dispose();
    expect(done.stepsCompleted).toBe(3);
    expect(done.adapter.a).toBe(uninterrupted.adapter.a);
    expect(done.adapter.b).toBe(uninterrupted.adapter.b);
  });

  it('leaves completions that hit the length limit out of the loss with maskTruncatedCompletions', async () => {
    const base = options(digits, 4, { dataset: digits.dataset({ size: 2, seed: 4 }), maxNewTokens: 8 });
    const trained = async (maskTruncatedCompletions: boolean) => {
      const store = new MemoryStore();
      const run = gradientGrpo({ ...base, store, runId: 'masked', loss: { maskTruncatedCompletions } });
      let tokens = 0;
      for await (const event of run) if (event.type === 'train') tokens = event.metrics.tokens;
      (await run.result()).trainer.dispose();
      const rollouts = (await store.getStep('masked', 1))!.items.flatMap((r) => r.rollouts);
      return { tokens, rollouts };
    };
    const all = await trained(false);
    expect(all.tokens).toBe(all.rollouts.reduce((n, r) => n + r.tokenIds.length, 0));
    const masked = await trained(true);
    // The same seed samples the same completions; only those that ended before the limit count.
    const ended = masked.rollouts.filter((r) => r.finishReason !== 'length');
    expect(masked.rollouts.length - ended.length).toBeGreaterThan(0);
    expect(masked.tokens).toBe(ended.reduce((n, r) => n + r.tokenIds.length, 0));
  });

  it('refuses bad input with typed errors before it starts', () => {
    expect(() => gradientGrpo({ ...options(digits, 0), policy: plain })).toThrow(/hiddenState: true/);
    expect(() => gradientGrpo({ ...options(digits, 0), groupSize: 1 })).toThrow(InvalidInputError);
    expect(() => gradientGrpo({ ...options(digits, 0), optimizer: { lr: -1 } })).toThrow(/optimizer.lr/);
    expect(() => gradientGrpo({ ...options(digits, 0), head: { rank: 0 } })).toThrow(/rank/);
    expect(() => gradientGrpo({ ...options(digits, 0), loss: { clipParam: Number.NaN } })).toThrow(/clipParam/);
    expect(() => gradientGrpo({ ...options(digits, 0), initialAdapter: '{"format":"nope"}' })).toThrow(/format/);
    expect(() => gradientGrpo({ ...options(digits, 0), dataset: [] })).toThrow(/dataset/);
  });

  it('resumes only gradient runs, with the run\'s own reward functions', async () => {
    const store = new MemoryStore();
    const result = await gradientGrpo({ ...options(digits, 0, { dataset: digits.dataset({ size: 2 }) }), store, runId: 'r' }).result();
    result.trainer.dispose();
    await expect(resumeGradientGrpo('r', { policy, rewards: shout.rewards, store }).result()).rejects.toThrow(/digit_share/);
    await expect(resumeGradientGrpo('missing', { policy, rewards: digits.rewards, store }).result()).rejects.toThrow(InvalidInputError);
  });
});
