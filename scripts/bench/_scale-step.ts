/**
 * One configuration of the scale bench in a process of its own, so its peak resident memory is
 * its own: a random-weight model in a hub model's exact shape (built on demand, gitignored), one
 * group sampled, a scoring pass, and LoRA steps through the public API (loadOnnxPolicy, loraModel,
 * loraEngine, GrpoTrainer). Prints one JSON line.
 *
 *   tsx scripts/bench/_scale-step.ts <shape> <fp32|fp16|q4> <group> <new tokens> [activationBudget bytes]
 *
 * Times are CPU time (user + system of every thread): other work on the machine would be in wall time.
 */
import { performance } from 'node:perf_hooks';
import * as ort from 'onnxruntime-node';
import { GrpoConfig } from '../../lib/math.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { LoraGraphs } from '../../lib/train/graph/lora-graph-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { loraEngine, loraModel } from '../../lib/train/lora-engine.js';
import { estimateStepMemory } from '../../lib/train/memory.js';
import { groupRolloutBatch } from '../../lib/train/rollouts.js';
import { GrpoTrainer } from '../../lib/train/trainer.js';
import { cpuTimed, hubShapeModel } from './_hub-shapes.js';

const PROMPT = 'Answer with digits only: what is 7 x 6?';

async function main(): Promise<void> {
  const [shape, dtype, groupArg, tokensArg, budgetArg] = process.argv.slice(2);
  const G = Number(groupArg);
  const T = Number(tokensArg);
  if (dtype !== 'fp32' && dtype !== 'fp16' && dtype !== 'q4') throw new Error(`dtype must be fp32, fp16 or q4, got ${dtype}`);
  const { dir, modelBytes } = await hubShapeModel(shape, dtype);
  const timed = cpuTimed;
  // Resident memory after each phase (now, and the process's peak so far): where the bytes go.
  const memory: Array<{ phase: string; rss: number; peak: number }> = [];
  const mark = (phase: string) => memory.push({ phase, rss: process.memoryUsage().rss, peak: process.resourceUsage().maxRSS * 1024 });
  mark('start');
  let t = performance.now();
  const policy = await loadOnnxPolicy({ model: dir, ...(dtype === 'fp32' ? {} : { dtype }) });
  const loadMs = performance.now() - t;
  mark('policy loaded');
  const [group, sampleMs] = await timed(() => policy.generateGroup({ prompt: PROMPT, groupSize: G, maxNewTokens: T, seed: 1 }));
  const completions = group.completions.map((c) => c.tokenIds);
  const sampled = completions.reduce((n, c) => n + c.length, 0);
  await policy.scoreCompletions({ prompt: PROMPT, completions });
  const [scored, scoreMs] = await timed(() => policy.scoreCompletions({ prompt: PROMPT, completions }));
  mark('sampled and scored');

  t = performance.now();
  const model = await loraModel(policy, { r: 8, alpha: 16, seed: 3 });
  const readMs = performance.now() - t;
  mark('weights read');
  t = performance.now();
  const lora = { r: 8, scale: model.adapter.scale, targetModules: model.adapter.config.targetModules };
  const graph = await LoraGraphs.create(ort as unknown as GraphRuntime, model.weights, lora, budgetArg ? { activationBudget: Number(budgetArg) } : {});
  const buildMs = performance.now() - t;
  mark('graphs built');
  const estimate = estimateStepMemory(model.weights.shape, { groupSize: G, promptTokens: group.promptTokenIds.length, completionTokens: T, dtype, activationBudget: graph.activationBudget });
  // Adapter B starts at zero: the engine's log-probs are the base model's, as the scoring pass's.
  const pass = await graph.forward(model.adapter, [{ promptIds: group.promptTokenIds, completions }]);
  let drift = 0;
  pass.logprobs.forEach((row, c) => row.forEach((v, k) => (drift = Math.max(drift, Math.abs(v - scored.logprobs[c][k])))));

  const trainer = new GrpoTrainer(loraEngine(model, { graph }), { lr: 1e-4 }, new GrpoConfig({ numGenerations: G, beta: 0, entropyCoeff: 0 }));
  const batch = groupRolloutBatch([{ completions: group.completions.map((c) => ({ tokenIds: c.tokenIds, logprobs: c.logprobs })), rewards: completions.map((_, i) => (i % 2 === 0 ? 1 : 0)) }]);
  const steps: number[] = [];
  const stepWall: number[] = [];
  for (let i = 0; i < 3; i++) {
    t = performance.now();
    steps.push((await timed(() => trainer.trainStep(batch, [{ prompt: PROMPT }])))[1]);
    stepWall.push(performance.now() - t);
    mark(`step ${i + 1}`);
  }
  trainer.dispose();
  await policy.dispose();
  const rss = process.resourceUsage().maxRSS * 1024;
  console.log(JSON.stringify({ shape, dtype, G, T, promptTokens: group.promptTokenIds.length, sampled, modelBytes, loadMs, sampleMs, scoreMs, readMs, buildMs, steps, stepWall, drift, peakRss: rss, memory, estimate }));
}

await main();
