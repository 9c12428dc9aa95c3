/**
 * A LoRA run taking turns (`takeTurns`): on a small built model with its weights in external data
 * (the hub's layout), the same run with and without it samples the same rollouts with the same
 * log-probs and ends with the same adapter and AdamW state, bit for bit; and the turns are real:
 * counting onnxruntime's live sessions, while taking turns the sampler's decoder session is never
 * alive during an engine run and no engine session is alive during a decoder run, where the run
 * without turns keeps both all along.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loraGrpo } from '../../lib/grad.js';
import { MemoryStore } from '../../lib/index.js';
import { readLoraCheckpoint } from '../../lib/lora/format.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { digits } from '../../lib/tasks/index.js';
import { buildModel } from '../../scripts/build-model/index.js';
import { SMALL } from '../train/exports.js';

type Session = { inputNames: readonly string[]; run: (...args: unknown[]) => Promise<unknown>; release: () => Promise<void> };
type SessionClass = { create: (...args: unknown[]) => Promise<Session> };

/** Live sessions (decoder: the sampler's, fed input_ids; the rest are the engine's), and per run the other kind's live count. */
const live = new Set<Session>();
const seen: Array<{ decoder: boolean; othersLive: number }> = [];
const isDecoder = (s: Session) => s.inputNames.includes('input_ids');
const Sessions = ort.InferenceSession as unknown as SessionClass;
const create = Sessions.create;

let root = '';
let policy: OnnxPolicy;
beforeAll(async () => {
  Sessions.create = async (...args: unknown[]) => {
    const session = await create.apply(Sessions, args);
    const { run, release } = session;
    live.add(session);
    session.run = (...a: unknown[]) => {
      seen.push({ decoder: isDecoder(session), othersLive: [...live].filter((s) => isDecoder(s) !== isDecoder(session)).length });
      return run.apply(session, a);
    };
    session.release = () => {
      live.delete(session);
      return release.apply(session);
    };
    return session;
  };
  root = await mkdtemp(join(tmpdir(), 'webgrpo-take-turns-'));
  await buildModel({ ...SMALL, names: 'exporter', externalData: true }, root);
  policy = await loadOnnxPolicy({ model: root });
});
afterAll(async () => {
  await policy?.dispose();
  Sessions.create = create;
  if (root) await rm(root, { recursive: true, force: true });
});

const shape = { dataset: digits.dataset({ size: 2, seed: 5 }), rewards: digits.rewards, groupSize: 4, batchSize: 1, maxNewTokens: 6, lora: { r: 2, alpha: 4 }, optimizer: { lr: 0.05 }, seed: 7 };

async function trained(takeTurns: boolean) {
  const store = new MemoryStore();
  seen.length = 0;
  const run = loraGrpo({ ...shape, policy, store, runId: 'turns', takeTurns });
  const result = await run.result();
  const steps = await Promise.all([1, 2].map(async (s) => (await store.getStep('turns', s))!));
  return { result, runs: [...seen], rollouts: steps.map((s) => s.items.map((item) => item.rollouts.map((r) => ({ tokenIds: r.tokenIds, logprobs: r.logprobs })))), config: (await store.getRun('turns'))!.config, checkpoint: await store.getAdapter('turns') };
}

describe('a LoRA run taking turns', () => {
  it('trains to the same bits as without, and never holds the sampler and the engine together', async () => {
    const together = await trained(false);
    // A run hands its trainer over: this one's engine sessions go before the next run counts its own.
    together.result.trainer.dispose();
    for (const s of live) if (!isDecoder(s)) live.delete(s);
    const turns = await trained(true);
    expect(turns.result).toMatchObject({ status: 'completed', stepsCompleted: 2 });
    expect(turns.config).toMatchObject({ takeTurns: true });
    expect(together.config).not.toHaveProperty('takeTurns');
    // The second step's rollouts were sampled from the adapter the first step left: the same bits.
    expect(turns.rollouts).toEqual(together.rollouts);
    expect(turns.result.adapter.layers).toEqual(together.result.adapter.layers);
    // The committed adapter and AdamW moments (the file's creation time aside).
    expect(readLoraCheckpoint(turns.checkpoint)).toEqual(readLoraCheckpoint(together.checkpoint));

    const decoderRuns = (runs: typeof seen) => runs.filter((r) => r.decoder);
    const engineRuns = (runs: typeof seen) => runs.filter((r) => !r.decoder);
    for (const runs of [together.runs, turns.runs]) expect(Math.min(decoderRuns(runs).length, engineRuns(runs).length)).toBeGreaterThan(10);
    // Without turns the engine's sessions live while the sampler decodes, and the sampler's while the engine trains.
    expect(Math.min(...decoderRuns(together.runs).map((r) => r.othersLive))).toBeGreaterThan(0);
    expect(Math.min(...engineRuns(together.runs).map((r) => r.othersLive))).toBe(1);
    // Taking turns, never.
    expect(Math.max(...turns.runs.map((r) => r.othersLive))).toBe(0);
    // The run ends with the sampler's session released, built again by the next request, which scores as before.
    expect(turns.result.trainer.engine.weights).toBeUndefined();
    expect(together.result.trainer.engine.weights).toBeDefined();
    expect(policy.sessionReleased).toBe(true);
    const { logprobs } = await policy.scoreCompletions({ prompt: 'x', completions: [together.rollouts[0][0][0].tokenIds] });
    expect(policy.sessionReleased).toBe(false);
    expect(logprobs[0].every(Number.isFinite)).toBe(true);
  });

  it('is refused for a policy that cannot release its session', () => {
    const p = policy;
    const bare = { info: p.info, generateGroup: p.generateGroup.bind(p), modelGraph: p.modelGraph.bind(p), replaceGraph: p.replaceGraph.bind(p), followAdapter: p.followAdapter.bind(p), promptIds: p.promptIds.bind(p), dispose: async () => undefined };
    expect(() => loraGrpo({ ...shape, policy: bare, takeTurns: true })).toThrow(expect.objectContaining({ code: 'InvalidInput', argument: 'takeTurns' }));
    expect(() => loraGrpo({ ...shape, policy, takeTurns: 'yes' as never })).toThrow(expect.objectContaining({ code: 'InvalidInput', argument: 'takeTurns' }));
  });
});
