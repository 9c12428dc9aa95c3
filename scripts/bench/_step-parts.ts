/**
 * Where a LoRA step's CPU time goes, graph by graph, at SmolLM2-135M's shape (the model the scale
 * bench builds): the engine alone on a random group of G x T tokens after a 39-token prompt, every
 * session run timed, three steps. Prints one block per step.
 *
 *   tsx scripts/bench/_step-parts.ts [group] [new tokens] [microBatchTokens] [activationBudget] [fused]
 *
 * `fused` runs the step as the trainer does for a loss without an entropy term
 * (forwardBackward, d log p / d hidden taken in the head's forward); else forward, then backward.
 * CPU time is the process's (user + system of every thread), taken around each run.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { createLoraAdapter, loraTensors } from '../../lib/lora/adapter.js';
import { loraOptimizerState } from '../../lib/lora/optimizer.js';
import { findDecoder } from '../../lib/policy/onnx/structure/find-decoder.js';
import { LoraGraphs } from '../../lib/train/graph/lora-graph-engine.js';
import type { GraphRuntime, GraphTensor } from '../../lib/train/graph/runtime.js';
import { adamwTensors, resolveOptimizer } from '../../lib/train/optimizer.js';
import { buildModel, MODEL_FILES } from '../build-model/index.js';
import { hubShapeSpec } from './_hub-shapes.js';

/** The engine's private parts this script times (its runners and the method every run goes through). */
interface Internals {
  layerRunners: Array<{ forward: unknown; backward: unknown; keep: { forward: unknown; backward: unknown } }>;
  head: { forward: unknown; gradient: unknown; backward: unknown };
  run(runner: unknown, pool: Record<string, GraphTensor>): Promise<Record<string, GraphTensor>>;
}

const cpuMs = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

async function main(): Promise<void> {
  const [groupArg = '8', tokensArg = '128', microArg, keepArg, mode] = process.argv.slice(2);
  const { spec, dir } = await hubShapeSpec('smollm2-135m', 'fp32');
  const file = join(dir, MODEL_FILES.fp32);
  if (!existsSync(file)) await buildModel(spec, dir);
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const weights = findDecoder(await readFile(file), { config, externalData: {} });
  const adapter = createLoraAdapter(weights.shape, { r: 8, alpha: 16, seed: 3 });
  const lora = { r: 8, scale: adapter.scale, targetModules: adapter.config.targetModules };
  const engine = await LoraGraphs.create(ort as unknown as GraphRuntime, weights, lora, { ...(microArg ? { microBatchTokens: Number(microArg) } : {}), ...(keepArg ? { activationBudget: Number(keepArg) } : {}) });

  const inner = engine as unknown as Internals;
  const names = new Map<unknown, string>([
    [inner.layerRunners[0].forward, 'layer forward'],
    [inner.layerRunners[0].backward, 'layer backward (forward recomputed)'],
    [inner.layerRunners[0].keep.forward, 'layer forward, activations kept'],
    [inner.layerRunners[0].keep.backward, 'layer backward from kept activations'],
    [inner.head.forward, 'head forward'],
    [inner.head.gradient, 'head forward with d log p / d hidden'],
    [inner.head.backward, 'head backward'],
  ]);
  const parts = new Map<string, { runs: number; cpu: number }>();
  const run = inner.run.bind(engine);
  inner.run = async (runner, pool) => {
    const start = cpuMs();
    const out = await run(runner, pool);
    const name = names.get(runner) ?? 'other';
    const part = parts.get(name) ?? { runs: 0, cpu: 0 };
    part.runs++;
    part.cpu += cpuMs() - start;
    parts.set(name, part);
    return out;
  };

  let seed = 1;
  const draw = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % weights.shape.vocabSize;
  const group = { promptIds: Array.from({ length: 39 }, draw), completions: Array.from({ length: Number(groupArg) }, () => Array.from({ length: Number(tokensArg) }, draw)) };
  const state = loraOptimizerState(adapter);
  const optimizer = resolveOptimizer({ lr: 1e-4 });
  for (let step = 1; step <= 3; step++) {
    parts.clear();
    const t0 = cpuMs();
    let grad: typeof adapter;
    let t1: number;
    if (mode === 'fused') {
      grad = (await engine.forwardBackward(adapter, [group], 1, (_, start, end) => ({ dLogp: new Float64Array(end - start).fill(0.01), dEntropy: new Float64Array(end - start) }), { entropyGradient: false })).gradient;
      t1 = cpuMs();
    } else {
      const pass = await engine.forward(adapter, [group]);
      t1 = cpuMs();
      grad = await pass.backward(pass.logprobs.map((row) => row.map(() => 0.01)));
    }
    const t2 = cpuMs();
    adamwTensors(loraTensors(adapter), loraTensors(grad), loraTensors(state.m), loraTensors(state.v), ++state.step, 1, optimizer);
    const t3 = cpuMs();
    const inRuns = [...parts.values()].reduce((n, p) => n + p.cpu, 0);
    console.log(`step ${step}: ${(t3 - t0).toFixed(0)} CPU ms (forward ${(t1 - t0).toFixed(0)}, backward ${(t2 - t1).toFixed(0)}), RSS ${Math.round(process.memoryUsage().rss / 2 ** 20)} MB, peak ${Math.round(process.resourceUsage().maxRSS / 2 ** 10)} MB`);
    for (const [name, p] of parts) console.log(`  ${name}: ${p.runs} runs, ${p.cpu.toFixed(0)} ms`);
    console.log(`  outside the runs (embedding, batch inputs, head rows, gradient sums): ${(t2 - t0 - inRuns).toFixed(0)} ms`);
    console.log(`  AdamW: ${(t3 - t2).toFixed(0)} ms`);
  }
  await engine.release();
}

await main();
