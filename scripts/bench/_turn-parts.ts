/**
 * Where a LoRA step's extra CPU time goes when the engine takes turns (a diagnosis, not a bench
 * row): at a hub shape, random completions of the group's size, the same step warm (weights and
 * graph sessions kept) and after `releaseWeights` (read again, graphs built again), and each part
 * of that alone: the weights read, the graphs' sessions built, the garbage collected; first, the
 * sampler's turn: a scoring pass of the same completions with its session kept and built again
 * after `releaseSession` (`sampler`).
 *
 *   tsx scripts/bench/_turn-parts.ts <shape> <fp32|q4> <group> <new tokens> [cycles]
 *
 * CPU ms (user + system of every thread; system separately: page faults on fresh memory land there).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { GrpoConfig } from '../../lib/math.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { LoraGraphs } from '../../lib/train/graph/lora-graph-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { loraEngine, loraModel } from '../../lib/train/lora-engine.js';
import { groupRolloutBatch } from '../../lib/train/rollouts.js';
import { GrpoTrainer } from '../../lib/train/trainer.js';
import { collectGarbage } from '../../lib/policy/onnx/collect-garbage.js';
import { hubShapeModel } from './_hub-shapes.js';

const PROMPT = 'Answer with digits only: what is 7 x 6?';
const mb = (b: number) => Math.round(b / 1e6);

async function cpu<T>(fn: () => Promise<T>): Promise<[T, { ms: number; sys: number }]> {
  const c0 = process.cpuUsage();
  const value = await fn();
  const c = process.cpuUsage(c0);
  return [value, { ms: Math.round((c.user + c.system) / 1000), sys: Math.round(c.system / 1000) }];
}

async function main(): Promise<void> {
  const [shape, dtype, groupArg, tokensArg, cyclesArg] = process.argv.slice(2);
  const G = Number(groupArg);
  const T = Number(tokensArg);
  const cycles = Number(cyclesArg ?? 3);
  if (dtype !== 'fp32' && dtype !== 'q4') throw new Error(`dtype must be fp32 or q4, got ${dtype}`);
  const { dir } = await hubShapeModel(shape, dtype);
  const policy = await loadOnnxPolicy({ model: dir, ...(dtype === 'q4' ? { dtype: 'q4' as const } : {}) });
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const vocab = Number((JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { vocab_size: number }).vocab_size);
  const completions = Array.from({ length: G }, () => ({ tokenIds: Array.from({ length: T }, () => Math.floor(rand() * vocab)), logprobs: Array.from({ length: T }, () => -10) }));
  const score = () => cpu(() => policy.scoreCompletions({ prompt: PROMPT, completions: completions.map((c) => c.tokenIds) }));
  await score();
  const sampler: Record<string, unknown>[] = [];
  for (let i = 0; i < cycles; i++) {
    const [, warm] = await score();
    await policy.releaseSession();
    const [, rebuilt] = await score();
    sampler.push({ warm, rebuilt });
  }
  console.error(JSON.stringify({ sampler }));
  await policy.releaseSession();
  const memory = { activationBudget: 519278976, microBatchTokens: 768 };
  const { engine, reload, lora } = await (async () => {
    const model = await loraModel(policy, { r: 8, alpha: 16, seed: 3 });
    const lora = { r: 8, scale: model.adapter.scale, targetModules: model.adapter.config.targetModules };
    const graph = await LoraGraphs.create(ort as unknown as GraphRuntime, model.weights, lora, memory);
    return { engine: loraEngine(model, { graph }), reload: model.reload!, lora };
  })();
  const trainer = new GrpoTrainer(engine, { lr: 1e-4 }, new GrpoConfig({ numGenerations: G, beta: 0, entropyCoeff: 0 }));
  const batch = groupRolloutBatch([{ completions, rewards: completions.map((_, k) => (k % 2 === 0 ? 1 : 0)) }]);
  const step = () => cpu(() => trainer.trainStep(batch, [{ prompt: PROMPT }]).then(() => trainer.releaseStates()));
  const rss = () => mb(process.memoryUsage().rss);
  const rows: Record<string, unknown>[] = [];
  await step(); // the first step, warm-up of the kept sessions
  for (let i = 0; i < cycles; i++) {
    const [, warm] = await step();
    const afterWarm = rss();
    await engine.releaseWeights();
    const [, gc1] = await cpu(() => collectGarbage());
    const released = rss();
    const [, turn] = await step();
    const afterTurn = rss();
    await engine.releaseWeights();
    const [, gc2] = await cpu(() => collectGarbage());
    const [weights, read] = await cpu(() => reload());
    const afterRead = rss();
    const [graphs, build] = await cpu(() => LoraGraphs.create(ort as unknown as GraphRuntime, weights, lora, memory));
    const afterBuild = rss();
    await graphs.release();
    rows.push({ warm, turn, gc1, gc2, read, build, rss: { afterWarm, released, afterTurn, afterRead, afterBuild } });
    console.error(JSON.stringify(rows.at(-1)));
  }
  console.log(JSON.stringify({ shape, dtype, G, T, sampler, rows }));
  trainer.dispose();
  await policy.dispose();
}

await main();
