/**
 * A LoRA run given a memoryBudget chooses how to hold its memory (takeTurns 'auto', the default
 * with a budget), on a small built model: a budget the sampler and the step fit together runs
 * together, one only taking turns fits runs in turns (the engine's weights and the sampler's
 * session released, as takeTurns: true releases them), one nothing fits is refused before any
 * step with an OutOfMemoryError that names what would fit, the runs already stored kept whole;
 * the run-start event says which mode and why. In turns, the least budget also collects
 * JavaScript's garbage at each turn and one with room for it does not, to the same bits.
 * An fp16 base kept at 16 bits is planned as such, not as 4-bit blocks.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loraGrpo, type LoraEvent } from '../../lib/grad.js';
import { MemoryStore, OutOfMemoryError } from '../../lib/index.js';
import { readLoraCheckpoint } from '../../lib/lora/format.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { promptOf } from '../../lib/run/rollout.js';
import { digits } from '../../lib/tasks/index.js';
import { loraModel } from '../../lib/train/lora-engine.js';
import { DEFAULT_MICRO_BATCH_TOKENS, estimateStepMemory, NODE_RUNTIME_BYTES } from '../../lib/train/memory.js';
import { buildModel } from '../../scripts/build-model/index.js';
import { SMALL } from '../train/exports.js';

let root = '';
let policy: OnnxPolicy;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'webgrpo-memory-mode-'));
  await buildModel({ ...SMALL, names: 'exporter', externalData: true }, root);
  policy = await loadOnnxPolicy({ model: root });
});
afterAll(async () => {
  await policy?.dispose();
  if (root) await rm(root, { recursive: true, force: true });
});

const dataset = digits.dataset({ size: 1, seed: 5 });
const shape = { dataset, rewards: digits.rewards, groupSize: 4, batchSize: 1, maxNewTokens: 6, lora: { r: 2, alpha: 4 }, optimizer: { lr: 0.05 }, seed: 7 };

/** The least estimateStepMemory gives together and in turns over the micro-batches a plan may take, at this run's settings. */
async function least() {
  const { weights } = await loraModel(policy, { r: 2, alpha: 4 });
  const settings = { groupSize: 4, promptTokens: Math.max(...dataset.map((item) => policy.promptIds(promptOf(item)).length)), completionTokens: 6, r: 2 };
  const needs = [];
  for (let tokens = DEFAULT_MICRO_BATCH_TOKENS; tokens >= 16; tokens >>= 1) needs.push(estimateStepMemory(weights.shape, { ...settings, microBatchTokens: tokens, activationBudget: 0 }));
  // In Node a run's budget is the process's: the runtime's own bytes count.
  const R = NODE_RUNTIME_BYTES;
  return { together: Math.min(...needs.map((n) => n.together)) + R, inTurns: Math.min(...needs.map((n) => n.inTurns)) + R, atDefault: { together: needs[0].together + R, inTurns: needs[0].inTurns + R }, turnGarbage: Math.max(...needs.map((n) => n.turnGarbage)) };
}

async function run(store: MemoryStore, runId: string, memoryBudget: number, takeTurns?: true) {
  const events: LoraEvent[] = [];
  const lora = loraGrpo({ ...shape, policy, store, runId, memoryBudget, ...(takeTurns ? { takeTurns } : {}) });
  let failure: unknown;
  try {
    for await (const event of lora) events.push(event);
  } catch (error) {
    failure = error;
  }
  const start = events.find((e): e is Extract<LoraEvent, { type: 'run-start' }> => e.type === 'run-start');
  return { start, events, failure, result: failure ? undefined : await lora.result() };
}

describe('a LoRA run with a memoryBudget', () => {
  it('runs together when together fits, in turns when only that fits, and is refused before any step when neither does', async () => {
    const need = await least();
    expect(need.inTurns).toBeLessThan(need.together);
    const store = new MemoryStore();

    const together = await run(store, 'together', need.atDefault.together);
    expect(together.start?.memory).toMatchObject({ mode: 'together', budget: need.atDefault.together, microBatchTokens: DEFAULT_MICRO_BATCH_TOKENS });
    expect(together.start?.memory.reason).toMatch(/together need about/);
    expect(together.result).toMatchObject({ status: 'completed', stepsCompleted: 1 });
    expect((await store.getRun('together'))!.config).toMatchObject({ takeTurns: 'auto', memoryBudget: need.atDefault.together });
    // Together: the engine keeps its weights and the sampler its session.
    expect(together.result!.trainer.engine.weights).toBeDefined();
    expect(policy.sessionReleased).toBe(false);
    together.result!.trainer.dispose();

    // In Node a turn's arrays can be collected: the least budget in turns takes that lever too.
    const turns = await run(store, 'turns', need.inTurns);
    expect(turns.start?.memory).toMatchObject({ mode: 'turns', budget: need.inTurns, collectGarbage: true, runtime: NODE_RUNTIME_BYTES });
    expect(turns.start?.memory.reason).toMatch(/^Taking turns and collecting JavaScript's garbage at each turn: .* more than the \d+ MB memoryBudget; collected, about \d+ MB \(250 MB of it the runtime's own\)\.$/);
    expect(turns.result).toMatchObject({ status: 'completed', stepsCompleted: 1 });
    // In turns: the engine released its weights after the step and the sampler's session is released until the next request.
    expect(turns.result!.trainer.engine.weights).toBeUndefined();
    expect(policy.sessionReleased).toBe(true);
    turns.result!.trainer.dispose();

    // With room for what a turn leaves uncollected, the turns do not collect, and train to the same bits.
    const loose = await run(store, 'loose', need.atDefault.inTurns + need.turnGarbage, true);
    expect(loose.start?.memory).toMatchObject({ mode: 'turns', collectGarbage: false });
    expect(loose.start?.memory.reason).toMatch(/^Taking turns \(takeTurns: true\): about \d+ MB \(250 MB of it the runtime's own\) of the \d+ MB memoryBudget\.$/);
    expect(loose.result).toMatchObject({ status: 'completed', stepsCompleted: 1 });
    const rollouts = async (runId: string) => (await store.getStep(runId, 1))!.items.map((item) => item.rollouts.map((r) => ({ tokenIds: r.tokenIds, logprobs: r.logprobs })));
    expect(await rollouts('loose')).toEqual(await rollouts('turns'));
    expect(loose.result!.adapter.layers).toEqual(turns.result!.adapter.layers);
    expect(readLoraCheckpoint((await store.getAdapter('loose'))!)).toEqual(readLoraCheckpoint((await store.getAdapter('turns'))!));
    loose.result!.trainer.dispose();

    const before = { together: await store.getStep('together', 1), turns: await store.getStep('turns', 1), adapter: await store.getAdapter('turns') };
    const refused = await run(store, 'refused', need.inTurns - 1);
    expect(refused.failure).toBeInstanceOf(OutOfMemoryError);
    expect((refused.failure as OutOfMemoryError).code).toBe('OutOfMemory');
    expect((refused.failure as Error).message).toMatch(/does not fit the \d+ MB memoryBudget even taking turns: .* It fits with .*a memoryBudget of at least \d+ MB\.$/);
    // Before any step: nothing of it sampled or committed, and the runs stored before it are whole.
    expect(refused.events.some((e) => e.type === 'rollouts')).toBe(false);
    expect(await store.getStep('refused', 1)).toBeUndefined();
    expect(await store.getStep('together', 1)).toEqual(before.together);
    expect(await store.getStep('turns', 1)).toEqual(before.turns);
    expect(await store.getAdapter('turns')).toEqual(before.adapter);
  });

  it('plans an fp16 base at 16 bits a weight, as the engine holds it, not as 4-bit blocks', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'webgrpo-memory-mode-fp16-'));
    try {
      await buildModel({ ...SMALL, weights: 'fp16' }, folder);
      const half = await loadOnnxPolicy({ model: folder });
      try {
        const { weights } = await loraModel(half, { r: 2, alpha: 4 });
        const planned = await (async () => {
          const lora = loraGrpo({ ...shape, policy: half, store: new MemoryStore(), runId: 'fp16', memoryBudget: 1e12 });
          for await (const event of lora) if (event.type === 'run-start') return event.memory;
          return undefined;
        })();
        expect(planned?.mode).toBe('together');
        const settings = { groupSize: 4, promptTokens: Math.max(...dataset.map((item) => half.promptIds(promptOf(item)).length)), prompts: 1, completionTokens: 6, r: 2, tiedHead: weights.lmHead === undefined, microBatchTokens: planned!.microBatchTokens!, activationBudget: 0 };
        // The plan's `together` is the estimate's with the backward recomputing at its micro-batches; the runtime's own bytes are counted apart (`runtime`).
        const as = (dtype: 'fp16' | 'q4') => estimateStepMemory(weights.shape, { ...settings, dtype }).together;
        expect(planned!.together).toBe(as('fp16'));
        expect(as('fp16')).toBeGreaterThan(as('q4'));
      } finally {
        await half.dispose();
      }
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
