/**
 * GRPO iterations at a hub model's shape in a process of its own, with or without taking turns
 * (a LoRA run's `takeTurns`), so its peak resident memory is its own: the calls a LoRA run makes
 * (lib/methods/gradient/lora.ts) on a random-weight model built on demand (gitignored): per
 * iteration a group sampled, the step's update through GrpoTrainer on loraEngine, and the
 * sampler following the updated adapter. Taking turns, the sampler's session is released before
 * the update and built again by the next group, the engine's weights after it and read again by
 * the next update. Prints one JSON line, with a digest of the sampled log-probs and the adapter
 * to check that both ways give the same bits (and `optimizerDigest`, of AdamW's moments).
 *
 *   tsx scripts/bench/_scale-turns.ts <shape> <fp32|q4> <group> <new tokens> <turns: 0|1|budget=BYTES> [iterations] [collect: 0|1] [score: 0|N]
 *
 * `collect` 1: taking turns, JavaScript's garbage is collected at each turn (collectGarbage), as
 * a LoRA run does when its memory plan says so (`collectGarbage`). `budget=BYTES`: the run's
 * memory plan decides both, as a LoRA run with that memoryBudget in Node does (planRunMemory with
 * takeTurns 'auto', the runtime counted, the engine's micro-batches and activations as planned).
 * `score` N: after the iterations, a scoring pass of the last group's completions, then N more
 * timed (`scoreRuns`, the CPU time of each; `scoreMs` the first of them), for the step's ratio to
 * it (phase `scored`, after `peakRss` is taken).
 * I41_ENGINE_TURN=0 collects before the sampler's turns only, not before the engine's (a diagnosis
 * of what each collection costs the update).
 *
 * Times are CPU time (user + system of every thread) except `iterationWall`. Each phase's memory
 * is the RSS at its end and its own peak (`phasePeak`, Linux's high-water mark reset at each
 * phase's start); `peak` is the largest so far. Run with
 * NODE_OPTIONS=--expose-gc to collect garbage after each turn (a diagnosis: what of the peak is
 * JavaScript garbage, the arrays of the weights read before, not yet collected).
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { GrpoConfig } from '../../lib/math.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { buildLoraGraphs, loraEngine, loraModel } from '../../lib/train/lora-engine.js';
import { loraTensors } from '../../lib/lora/adapter.js';
import { groupRolloutBatch } from '../../lib/train/rollouts.js';
import { GrpoTrainer } from '../../lib/train/trainer.js';
import { NODE_RUNTIME_BYTES } from '../../lib/train/memory.js';
import { planRunMemory, type MemoryPlan } from '../../lib/train/memory-plan.js';
import { canCollectGarbage } from '../../lib/policy/onnx/collect-garbage.js';
import { collectGarbage } from '../../lib/policy/onnx/collect-garbage.js';
import { cpuTimed, hubShapeModel } from './_hub-shapes.js';

const PROMPT = 'Answer with digits only: what is 7 x 6?';
const collect = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

async function main(): Promise<void> {
  const [shape, dtype, groupArg, tokensArg, turnsArg, iterationsArg, collectArg, scoreArg] = process.argv.slice(2);
  const G = Number(groupArg);
  const T = Number(tokensArg);
  const budget = turnsArg?.startsWith('budget=') ? Number(turnsArg.slice('budget='.length)) : undefined;
  let turns = turnsArg === '1';
  const iterations = Number(iterationsArg ?? 3);
  let collecting = turns && collectArg === '1';
  let plan: MemoryPlan | undefined;
  // At each turn, as lora.ts does when its plan collects.
  const collectMs: number[] = [];
  const turn = async (before: 'sampler' | 'engine') => {
    if (collecting && (before === 'sampler' || process.env.I41_ENGINE_TURN !== '0')) collectMs.push((await cpuTimed(() => collectGarbage()))[1]);
  };
  if (dtype !== 'fp32' && dtype !== 'q4') throw new Error(`dtype must be fp32 or q4, got ${dtype}`);
  const { dir, modelBytes } = await hubShapeModel(shape, dtype);
  const timed = cpuTimed;
  const memory: Array<{ phase: string; rss: number; peak: number; phasePeak: number; arrayBuffers: number }> = [];
  let peak = 0;
  const mark = (phase: string) => {
    // The phase's own peak: Linux's high-water mark since the last mark, which writing 5 to clear_refs resets.
    const phasePeak = Math.round((Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) * 1024) / 1e6);
    peak = Math.max(peak, phasePeak);
    const usage = process.memoryUsage();
    // arrayBuffers: what JavaScript's arrays hold (the engine's weights among them) until collected.
    memory.push({ phase, rss: Math.round(usage.rss / 1e6), peak, phasePeak, arrayBuffers: Math.round(usage.arrayBuffers / 1e6) });
    writeFileSync('/proc/self/clear_refs', '5');
  };
  mark('start');
  const policy = await loadOnnxPolicy({ model: dir, ...(dtype === 'q4' ? { dtype } : {}) });
  mark('policy loaded');
  // As the run opens (lora.ts): taking turns, the sampler's session goes before the engine reads its weights, and they go before it is built again.
  if (turns || budget !== undefined) await policy.releaseSession();
  // The model object in a scope of its own: held here, its weights would outlive the engine's release.
  const engine = await (async () => {
    const model = await loraModel(policy, { r: 8, alpha: 16, seed: 3 });
    if (budget === undefined) return loraEngine(model, { graph: await buildLoraGraphs(model) });
    const settings = { groupSize: G, promptTokens: policy.promptIds({ prompt: PROMPT }).length, completionTokens: T, r: 8, dtype: dtype as 'fp32' | 'q4', tiedHead: model.weights.lmHead === undefined };
    plan = planRunMemory(model.weights.shape, settings, budget, 'auto', { collectGarbage: canCollectGarbage(), runtimeBytes: NODE_RUNTIME_BYTES });
    turns = plan.mode === 'turns';
    collecting = plan.collectGarbage === true;
    return loraEngine(model, { graph: await buildLoraGraphs(model, { memory: { activationBudget: plan.activationBudget!, microBatchTokens: plan.microBatchTokens! } }) });
  })();
  const trainer = new GrpoTrainer(engine, { lr: 1e-4 }, new GrpoConfig({ numGenerations: G, beta: 0, entropyCoeff: 0 }));
  if (turns) await engine.releaseWeights();
  await turn('sampler');
  await policy.followAdapter(engine.adapter);
  mark('opened');

  const digest = createHash('sha256');
  const sample: number[] = [];
  const step: number[] = [];
  const switchMs: number[] = [];
  const iterationWall: number[] = [];
  let last: number[][] = [];
  for (let i = 0; i < iterations; i++) {
    const t = performance.now();
    const [group, sampleMs] = await timed(() => policy.generateGroup({ prompt: PROMPT, groupSize: G, maxNewTokens: T, seed: 1 + i }));
    sample.push(sampleMs);
    mark(`sampled ${i + 1}`);
    for (const c of group.completions) digest.update(new Float64Array(c.logprobs));
    last = group.completions.map((c) => c.tokenIds);
    const batch = groupRolloutBatch([{ completions: group.completions.map((c) => ({ tokenIds: c.tokenIds, logprobs: c.logprobs })), rewards: group.completions.map((_, k) => (k % 2 === 0 ? 1 : 0)) }]);
    if (turns) await policy.releaseSession();
    await turn('engine');
    collect();
    step.push((await timed(() => trainer.trainStep(batch, [{ prompt: PROMPT }])))[1]);
    trainer.releaseStates();
    mark(`step ${i + 1}`);
    const [, followMs] = await timed(async () => {
      if (turns) await engine.releaseWeights();
      await turn('sampler');
      await policy.followAdapter(engine.adapter);
    });
    collect();
    mark(`followed ${i + 1}`);
    switchMs.push(followMs);
    iterationWall.push(performance.now() - t);
  }
  for (const tensor of loraTensors(engine.adapter)) digest.update(tensor);
  // AdamW's moments apart, so `digest` stays comparable with runs recorded before it was taken.
  const optimizer = createHash('sha256');
  for (const tensor of [...loraTensors(engine.optimizerState.m), ...loraTensors(engine.optimizerState.v)]) optimizer.update(tensor);
  const peakRss = peak;
  // Twice, the second timed: taking turns, the first builds the sampler's session again.
  const score = () => policy.scoreCompletions({ prompt: PROMPT, completions: last });
  const scoreRuns: number[] = [];
  if (Number(scoreArg ?? 0) > 0) {
    await score();
    for (let k = 0; k < Number(scoreArg); k++) scoreRuns.push((await timed(score))[1]);
    mark('scored');
  }
  const scoreMs = scoreRuns[0];
  trainer.dispose();
  await policy.dispose();
  mark('disposed');
  console.log(JSON.stringify({ shape, dtype, G, T, turns, collecting, ...(plan ? { plan } : {}), collectMs, ...(scoreMs !== undefined ? { scoreMs, scoreRuns } : {}), gc: typeof (globalThis as { gc?: unknown }).gc === 'function', modelMB: Math.round(modelBytes / 1e6), sample, step, switchMs, iterationWall, peakRss, digest: digest.digest('hex').slice(0, 16), optimizerDigest: optimizer.digest('hex').slice(0, 16), memory }));
}

await main();
