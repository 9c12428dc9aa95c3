/**
 * The memory estimate of a LoRA step: what keeping a layer's activations costs is what the keeping
 * graphs really output (summed over their saved tensors, run by onnxruntime-node on a random
 * decoder), the estimate switches to recomputing when the budget is passed, counts 4-bit bases
 * packed, and refuses settings that are not counts; planMemory's micro-batches shrink with the
 * budget, the estimate says when only taking turns fits, and a run's memoryBudget is checked before
 * anything loads; planRunMemory holds a run together, in turns (collecting garbage at each turn
 * only where the turns need it) or refuses it by the same numbers.
 */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { InvalidInputError, OutOfMemoryError } from '../../lib/errors.js';
import { createLoraAdapter } from '../../lib/lora/adapter.js';
import { resolveLoraRunConfig } from '../../lib/methods/gradient/lora.js';
import { layout, batchInputs } from '../../lib/train/graph/batch-layout.js';
import { buildLayerGraphs, LAYER_IO, layerWeightInputs } from '../../lib/train/graph/layer-graphs.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { DEFAULT_MICRO_BATCH_TOKENS, estimateStepMemory, KEPT_PART_BYTES, KEPT_PART_TOKENS, keptActivationBytes, keptLayerBytes, keptPartRows, MIN_KEPT_TOKENS, NODE_RUNTIME_BYTES, planMemory, stepRows } from '../../lib/train/memory.js';
import { planRunMemory } from '../../lib/train/memory-plan.js';
import { digits } from '../../lib/tasks/index.js';
import { randomDecoder } from '../lora/random-decoder.js';

const runtime = ort as unknown as GraphRuntime;
const shape = { vocabSize: 31, hiddenSize: 16, intermediateSize: 40, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 4, ropeTheta: 1000, rmsNormEps: 1e-6 };
const SMOLLM2_135M = { vocabSize: 49152, hiddenSize: 576, intermediateSize: 1536, numLayers: 30, numHeads: 9, numKvHeads: 3, headDim: 64, ropeTheta: 100000, rmsNormEps: 1e-5 };

describe('keptLayerBytes', () => {
  it("is what the keeping forward graph outputs for its backward, to within 15% above it", async () => {
    const weights = randomDecoder({ shape, tied: true, seed: 5 });
    const adapter = createLoraAdapter(weights.shape, { r: 4, alpha: 8, seed: 1 });
    const lora = { r: 4, scale: adapter.scale, targetModules: adapter.config.targetModules };
    const graphs = buildLayerGraphs(weights.layers[0], weights.shape, lora, 'float32');
    const session = await ort.InferenceSession.create(graphs.keep.forward.model);
    const groups = [
      { promptIds: [1, 2, 3, 4, 5], completions: [[6, 7, 8, 9], [10, 11, 12, 13]] },
      { promptIds: [3, 4, 5], completions: [[7, 8, 9, 10, 11, 12]] },
    ];
    const batch = layout(groups, shape.vocabSize);
    const feeds: Record<string, ort.Tensor> = {
      ...(batchInputs(runtime, 'float32', weights.shape, batch, 1) as unknown as Record<string, ort.Tensor>),
      [LAYER_IO.x]: new ort.Tensor('float32', Float32Array.from({ length: batch.rows * batch.width * shape.hiddenSize }, (_, i) => Math.sin(i)), [batch.rows * batch.width, shape.hiddenSize]),
    };
    for (const input of layerWeightInputs(weights.layers[0], weights.shape, 'float32')) feeds[input.name] = new ort.Tensor(input.type === 'uint8' ? 'uint8' : 'float32', input.data, input.dims);
    adapter.layers[0] &&
      Object.entries(adapter.layers[0]).forEach(([m, pair]) => {
        feeds[`A.${m}`] = new ort.Tensor('float32', pair.A, [4, pair.inDim]);
        feeds[`B.${m}`] = new ort.Tensor('float32', pair.B, [pair.outDim, 4]);
      });
    const wanted = Object.fromEntries(graphs.keep.forward.inputs.map((name) => [name, feeds[name]]));
    const out = await session.run(wanted);
    // The shape tensors the backward reads are int64 and tiny; the activations are float32.
    const actual = graphs.keep.saved.reduce((n, name) => n + (out[name].type === 'float32' ? out[name].data.length * 4 : 0), 0);
    const estimate = keptLayerBytes(weights.shape, 4, 7, { rows: batch.rows, width: batch.width });
    expect(estimate).toBeGreaterThanOrEqual(actual);
    expect(estimate).toBeLessThan(actual * 1.15);
    await session.release();
  });
});

describe('estimateStepMemory', () => {
  it('keeps activations that fit the budget and recomputes past it, the same totals either side but for them', () => {
    const settings = { groupSize: 8, promptTokens: 39, completionTokens: 128, partByPart: false };
    const keep = estimateStepMemory(SMOLLM2_135M, { ...settings, activationBudget: 8 * 2 ** 30 });
    const recompute = estimateStepMemory(SMOLLM2_135M, { ...settings, activationBudget: 2 ** 20 });
    expect(keep.recompute).toBe(false);
    expect(keep.activations).toBeGreaterThan(2 ** 29);
    expect(recompute.recompute).toBe(true);
    expect(recompute.activations).toBe(0);
    expect(keep.total - recompute.total).toBe(keep.activations);
    // fp32 weights: 134.5M parameters (tied head), to the byte a float32 copy of them takes.
    expect(keep.weights / 4 / 1e6).toBeCloseTo(134.5, 0);
    for (const part of [keep.adapter, keep.layerInputs, keep.layerRun, keep.head]) expect(part).toBeGreaterThan(0);
    expect(keep.total).toBe(keep.weights + keep.adapter + keep.layerInputs + keep.activations + keep.layerRun + keep.head);
  });

  it("part by part holds one part's activations and layer inputs: SmolLM2-135M's 8 x 128 keeps two 166-token rows at a time", () => {
    const settings = { groupSize: 8, promptTokens: 39, completionTokens: 128 };
    const whole = estimateStepMemory(SMOLLM2_135M, { ...settings, partByPart: false, activationBudget: 8 * 2 ** 30 });
    const parts = estimateStepMemory(SMOLLM2_135M, settings);
    expect(parts.recompute).toBe(false);
    // Parts of two of the eight rows: a quarter of the whole batch's activations and layer inputs.
    expect(parts.activations).toBe(keptActivationBytes(SMOLLM2_135M, 8, 7, [{ rows: 2, width: 166 }]));
    expect(parts.activations * 4).toBe(whole.activations);
    expect(parts.layerInputs * 4).toBe(whole.layerInputs);
    expect(parts.layerRun).toBeLessThan(whole.layerRun);
    expect(parts.total).toBeLessThan(whole.total);
    expect(parts.inTurns).toBe(Math.max(parts.total, parts.sampler + parts.adapter));
    // Without room to keep even a part, the micro-batches recompute whole: the layer inputs of one.
    const recompute = estimateStepMemory(SMOLLM2_135M, { ...settings, activationBudget: 0 });
    expect(recompute).toMatchObject({ recompute: true, activations: 0, layerInputs: parts.layerInputs * 2, layerRun: whole.layerRun });
  });

  it('keptPartRows halves a micro-batch to parts of at most KEPT_PART_TOKENS that fit the budget, never under MIN_KEPT_TOKENS', () => {
    const rows = (at: { rows: number; width: number }, budget = 2 ** 29) => keptPartRows(SMOLLM2_135M, 8, 7, at, budget);
    expect(rows({ rows: 4, width: 166 })).toBe(2);
    expect(rows({ rows: 8, width: 40 })).toBe(8);
    expect(rows({ rows: 7, width: 100 })).toBe(2);
    expect(rows({ rows: 1, width: 300 })).toBe(1);
    expect(rows({ rows: 4, width: 166 }, 0)).toBe(0);
    // Under a tighter budget, smaller parts: one 166-token row fits 150 MB where two do not.
    expect(rows({ rows: 4, width: 166 }, 1.5e8)).toBe(1);
    // Two 100-token rows do not fit 100 MB and one is under MIN_KEPT_TOKENS: recomputed.
    expect(keptActivationBytes(SMOLLM2_135M, 8, 7, [{ rows: 2, width: 100 }])).toBeGreaterThan(1e8);
    expect(rows({ rows: 7, width: 100 }, 1e8)).toBe(0);
    expect(KEPT_PART_TOKENS).toBeGreaterThanOrEqual(MIN_KEPT_TOKENS);
    // At Qwen2.5-0.5B's shape two rows keep more than KEPT_PART_BYTES: single rows, whatever the budget.
    const qwen = { vocabSize: 151936, hiddenSize: 896, intermediateSize: 4864, numLayers: 24, numHeads: 14, numKvHeads: 2, headDim: 64, ropeTheta: 1000000, rmsNormEps: 1e-6 };
    expect(keptActivationBytes(qwen, 8, 7, [{ rows: 2, width: 166 }])).toBeGreaterThan(KEPT_PART_BYTES);
    expect(keptPartRows(qwen, 8, 7, { rows: 4, width: 166 }, 2 ** 30)).toBe(1);
  });

  it('counts a 4-bit base packed, under a fifth of its float32 size for the projections', () => {
    const settings = { groupSize: 4, promptTokens: 20, completionTokens: 16 };
    const fp32 = estimateStepMemory(SMOLLM2_135M, settings);
    const q4 = estimateStepMemory(SMOLLM2_135M, { ...settings, dtype: 'q4f16' });
    const embedding = 4 * (49152 * 576 + 576);
    expect((q4.weights - embedding) / (fp32.weights - embedding)).toBeLessThan(0.2);
  });

  it('refuses settings that are not positive counts', () => {
    expect(() => estimateStepMemory(shape, { groupSize: 0, promptTokens: 3, completionTokens: 4 })).toThrow(InvalidInputError);
    expect(() => estimateStepMemory(shape, { groupSize: 2, promptTokens: 3.5, completionTokens: 4 })).toThrow(/promptTokens/);
    expect(() => estimateStepMemory(shape, { groupSize: 2, promptTokens: 3, completionTokens: 4, prompts: -1 })).toThrow(/prompts/);
  });
});

describe('planMemory', () => {
  it("bounds a layer run by default: SmolLM2-135M's 8 x 128 after a 39-token prompt runs as two micro-batches of four 166-token rows", () => {
    expect(stepRows(SMOLLM2_135M, { groupSize: 8, promptTokens: 39, completionTokens: 128 })).toEqual([
      { rows: 4, width: 166 },
      { rows: 4, width: 166 },
    ]);
  });

  it('shrinks the micro-batches with the budget and keeps activations up to it', () => {
    const roomy = planMemory(SMOLLM2_135M, 2 ** 30);
    const tight = planMemory(SMOLLM2_135M, 32 * 2 ** 20);
    expect(roomy).toEqual({ activationBudget: 2 ** 30, microBatchTokens: DEFAULT_MICRO_BATCH_TOKENS });
    expect(tight.microBatchTokens).toBeLessThan(roomy.microBatchTokens);
    expect(tight.microBatchTokens).toBeGreaterThanOrEqual(16);
    expect(() => planMemory(shape, 0)).toThrow(/memoryBudget/);
  });

  it("is a run's memoryBudget, refused before anything loads when it is not a number of bytes", () => {
    const policy = { info: { backend: 'cpu', model: 'm' }, generateGroup: async () => ({}), scoreCompletions: async () => ({}), modelGraph: async () => ({}), replaceGraph: async () => {}, promptIds: () => [1], followAdapter: async () => {} };
    const options = { policy, dataset: digits.dataset(), rewards: digits.rewards } as unknown as Parameters<typeof resolveLoraRunConfig>[0];
    expect(resolveLoraRunConfig({ ...options, memoryBudget: 2 ** 28 })).toMatchObject({ memoryBudget: 2 ** 28, takeTurns: 'auto' });
    expect(resolveLoraRunConfig(options)).not.toHaveProperty('takeTurns');
    expect(resolveLoraRunConfig({ ...options, memoryBudget: 2 ** 28, takeTurns: false })).not.toHaveProperty('takeTurns');
    expect(() => resolveLoraRunConfig({ ...options, memoryBudget: -5 })).toThrow(/memoryBudget/);
  });
});

describe('estimateStepMemory, together and in turns', () => {
  it("fits SmolLM2-135M fp32 8 x 128 in 1.6 GB only in turns: the sampler and the step each fit, not both", () => {
    const estimate = estimateStepMemory(SMOLLM2_135M, { groupSize: 8, promptTokens: 39, completionTokens: 128 });
    expect(estimate.together).toBe(estimate.total + estimate.sampler);
    expect(estimate.inTurns).toBe(Math.max(estimate.total, estimate.sampler + estimate.adapter));
    expect(estimate.inTurns).toBeLessThan(estimate.together);
    expect(estimate.together).toBeGreaterThan(1.6e9);
    expect(estimate.inTurns).toBeLessThanOrEqual(1.6e9);
  });
});

describe('planRunMemory', () => {
  // A forward of the whole batch, then its backward (what a loss with topEntropyQuantile < 1 takes): the need grows with the group.
  const settings = { groupSize: 8, promptTokens: 39, completionTokens: 128, partByPart: false };
  const estimate = estimateStepMemory(SMOLLM2_135M, { ...settings, activationBudget: 0 });

  it("holds SmolLM2-135M fp32 8 x 128 together when together fits, in turns when only that fits, and says why", () => {
    const together = planRunMemory(SMOLLM2_135M, settings, estimate.together, 'auto');
    expect(together).toMatchObject({ mode: 'together', microBatchTokens: DEFAULT_MICRO_BATCH_TOKENS, together: estimate.together });
    expect(together.reason).toMatch(/together need about 1721 MB of the 1721 MB memoryBudget/);
    const turns = planRunMemory(SMOLLM2_135M, settings, 1.6e9, 'auto');
    expect(turns).toMatchObject({ mode: 'turns', inTurns: estimate.inTurns });
    expect(turns.reason).toMatch(/Taking turns: .* would need about 1721 MB, more than the 1600 MB memoryBudget; in turns about 954 MB/);
    // What the budget leaves past the step keeps activations (up to the engine's default).
    expect(turns.activationBudget).toBe(Math.min(1.6e9 - estimate.total, 2 ** 29));
    // Held to one mode, that mode or a refusal naming the other.
    expect(planRunMemory(SMOLLM2_135M, settings, 1.6e9, true).mode).toBe('turns');
    expect(() => planRunMemory(SMOLLM2_135M, settings, 1.6e9, false)).toThrow(/held together \(takeTurns: false\).* It fits with taking turns \(takeTurns: 'auto' or true/);
  });

  it("in Node counts the runtime and collects JavaScript's garbage at each turn only where the turns do not fit without it", () => {
    const node = { collectGarbage: true, runtimeBytes: NODE_RUNTIME_BYTES };
    // SmolLM2-135M fp32 8 x 128 at 1.576 GB (2 x the model file + 0.5 GB): in turns only by collecting.
    const tight = planRunMemory(SMOLLM2_135M, settings, 1.576e9, 'auto', node);
    expect(tight).toMatchObject({ mode: 'turns', collectGarbage: true, inTurns: estimate.inTurns, runtime: NODE_RUNTIME_BYTES });
    expect(estimate.inTurns + estimate.turnGarbage + NODE_RUNTIME_BYTES).toBeGreaterThan(1.576e9);
    expect(tight.reason).toBe(
      "Taking turns and collecting JavaScript's garbage at each turn: together about 1971 MB, in turns about 1742 MB with what a turn leaves uncollected, more than the 1576 MB memoryBudget; collected, about 1204 MB (250 MB of it the runtime's own).",
    );
    // Room for what a turn leaves: in turns without collecting; room for both: together, as without the lever.
    const loose = planRunMemory(SMOLLM2_135M, settings, 1.8e9, 'auto', node);
    expect(loose).toMatchObject({ mode: 'turns', collectGarbage: false });
    expect(loose.reason).toMatch(/^Taking turns: .* would need about 1971 MB, more than the 1800 MB memoryBudget; in turns about 1742 MB \(250 MB of it the runtime's own\)\.$/);
    expect(planRunMemory(SMOLLM2_135M, settings, estimate.inTurns + estimate.turnGarbage + NODE_RUNTIME_BYTES, true, node)).toMatchObject({ mode: 'turns', collectGarbage: false });
    expect(planRunMemory(SMOLLM2_135M, settings, estimate.together + NODE_RUNTIME_BYTES, 'auto', node)).toMatchObject({ mode: 'together', collectGarbage: false });
    // A runtime that cannot collect and whose budget is not the process's (a page) plans as before.
    expect(planRunMemory(SMOLLM2_135M, settings, 1.576e9, 'auto')).toMatchObject({ mode: 'turns', collectGarbage: false, runtime: 0 });
    // Refused, it names the collected need, the runtime counted, as what would fit.
    expect(() => planRunMemory(SMOLLM2_135M, settings, 9e8, true, node)).toThrow(
      /about 1921 MB with the sampler beside it, 1204 MB taking turns, collecting garbage at each turn, each with the runtime's own 250 MB \(estimateStepMemory\)\. .*a memoryBudget of at least 1204 MB\.$/,
    );
  });

  it('part by part holds one part at a time: SmolLM2-135M fp32 8 x 128 fits 1.6 GB together in smaller micro-batches, and only the replies\' length sets what fits', () => {
    const parts = { ...settings, partByPart: true };
    const plan = planRunMemory(SMOLLM2_135M, parts, 1.6e9, 'auto');
    expect(plan.mode).toBe('together');
    expect(plan.microBatchTokens).toBeLessThan(DEFAULT_MICRO_BATCH_TOKENS);
    expect(plan.together).toBeLessThanOrEqual(1.6e9);
    // Two prompts of 8 x 2048: more completions add no part, so only shorter replies are named, each fitting, the next longer not.
    const long = { ...parts, completionTokens: 2048, prompts: 2 };
    const message = refusal(long, 1.2e9);
    expect(message).not.toMatch(/groups of|prompt a step/);
    const value = Number(/replies of at most (\d+) tokens taking turns/.exec(message)![1]);
    expect(planRunMemory(SMOLLM2_135M, { ...long, completionTokens: value }, 1.2e9, 'auto').mode).toBe('turns');
    expect(() => planRunMemory(SMOLLM2_135M, { ...long, completionTokens: value + 1 }, 1.2e9, 'auto')).toThrow(OutOfMemoryError);
    expect(planRunMemory(SMOLLM2_135M, { ...long, completionTokens: 512, groupSize: 64 }, 1.2e9, 'auto').mode).toBe('turns');
  });

  const refusal = (s: Parameters<typeof planRunMemory>[1], budget: number) => {
    try {
      planRunMemory(SMOLLM2_135M, s, budget, 'auto');
    } catch (error) {
      expect(error).toBeInstanceOf(OutOfMemoryError);
      return (error as Error).message;
    }
    throw new Error('expected a refusal');
  };

  it('refuses a budget nothing fits in with an OutOfMemoryError naming single changes, each of which fits, and in which mode', () => {
    // Under the fp32 sampler itself no fewer tokens help: only a 4-bit base (which then fits together) or more memory.
    const small = refusal(settings, 8e8);
    expect(small).toMatch(/does not fit the 800 MB memoryBudget even taking turns: about 1671 MB with the sampler beside it, 954 MB taking turns/);
    expect(small).toMatch(/It fits with a 4-bit \(q4\) model, or a memoryBudget of at least 954 MB\.$/);
    expect(planRunMemory(SMOLLM2_135M, { ...settings, dtype: 'q4' }, 8e8, 'auto').mode).toBe('together');
    expect(planRunMemory(SMOLLM2_135M, settings, 954e6, 'auto').mode).toBe('turns');
    // Two prompts of 8 x 512 a step: the step sets the need, and each smaller setting named fits in turns, the next larger not.
    const long = { ...settings, completionTokens: 512, prompts: 2 };
    const message = refusal(long, 1.2e9);
    for (const [pattern, key] of [[/groups of (\d+) taking turns/, 'groupSize'], [/replies of at most (\d+) tokens taking turns/, 'completionTokens'], [/(\d+) prompt a step taking turns/, 'prompts']] as const) {
      const value = Number(pattern.exec(message)![1]);
      expect(planRunMemory(SMOLLM2_135M, { ...long, [key]: value }, 1.2e9, 'auto').mode).toBe('turns');
      if (key !== 'prompts') expect(() => planRunMemory(SMOLLM2_135M, { ...long, [key]: value + 1 }, 1.2e9, 'auto')).toThrow(OutOfMemoryError);
    }
    expect(message).toMatch(/a 4-bit \(q4\) model taking turns, or a memoryBudget of at least 1359 MB\.$/);
  });
});
