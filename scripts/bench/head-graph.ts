/**
 * The LM-head adapter's update on onnxruntime's kernels (GraphHeadEngine: the head graphs,
 * lib/train/graph/head-graph.ts) against the TypeScript CPU kernels it replaces in headEngine
 * (HostEngine), side by side in one run in Node, on the bench model's head (hidden 512,
 * vocabulary 8192, rank 8) over random token states: the adapter's part of an update (forward to
 * the adapted and reference log-probs, backward to dA and dB, AdamW), phase by phase in wall time
 * (_grad-measure.ts) and the whole in CPU time (user + system of every thread of the process).
 */
import * as ort from 'onnxruntime-node';
import { createAdapterWeights } from '../../lib/grad/adapter.js';
import type { HeadEngine } from '../../lib/grad/engine.js';
import { HostEngine } from '../../lib/grad/host-engine.js';
import { GraphHeadEngine } from '../../lib/train/graph/head-graph-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { BENCH } from '../build-model/index.js';
import { measureEngine, type EnginePhases } from './_grad-measure.js';
import { ms } from './_measure.js';

const RANK = 8;
const TOKENS = 2 * 8 * 64;
const REPEATS = 5;

async function timed(engine: HeadEngine): Promise<EnginePhases & { cpuMs: number }> {
  const c0 = process.cpuUsage();
  const phases = await measureEngine(engine, TOKENS, REPEATS);
  const c = process.cpuUsage(c0);
  engine.dispose();
  // measureEngine runs REPEATS + 1 updates (one warm-up) and writes the states once.
  return { ...phases, cpuMs: (c.user + c.system) / 1000 / (REPEATS + 1) };
}

export async function run(): Promise<string> {
  const shape = { hiddenSize: BENCH.hiddenSize, vocabSize: 8192, rank: RANK, scale: 2 };
  console.log('  head graphs on onnxruntime-node…');
  const graph = await timed(new GraphHeadEngine(createAdapterWeights(shape, 1), async () => ort as unknown as GraphRuntime));
  console.log('  TypeScript CPU kernels…');
  const host = await timed(new HostEngine(createAdapterWeights(shape, 1)));
  const x = (a: number, b: number) => (a / b).toFixed(2);
  const row = (name: string, e: EnginePhases & { cpuMs: number }) => `| ${name} | ${ms(e.forwardMs)} | ${ms(e.backwardMs)} | ${ms(e.stepMs)} | ${ms(e.totalMs)} | ${ms(e.cpuMs)} | ${x(e.cpuMs, graph.cpuMs)} |`;
  return [
    "## head-graph: the head adapter's update on onnxruntime's kernels against the TypeScript CPU kernels",
    '',
    `The bench model's head (hidden ${shape.hiddenSize}, vocabulary ${shape.vocabSize}), rank ${RANK}, ${TOKENS} token states (random). One update of the adapter's part: forward (adapted and reference log-probs), backward (dA, dB, norm), AdamW. ` +
      `Wall ms per phase are medians of ${REPEATS}; CPU ms per update is user + system of every thread over all ${REPEATS + 1} updates (one warm-up) and the random states' creation, so it counts the graphs' first run and a share of the states too. The machine is shared.`,
    '',
    '| | forward ms | backward ms | AdamW ms | update ms (wall) | update CPU ms | CPU x graphs |',
    '|---|---:|---:|---:|---:|---:|---:|',
    row('GraphHeadEngine (onnxruntime-node, what headEngine uses for CPU and WASM policies)', graph),
    row('HostEngine (TypeScript, one token at a time)', host),
    '',
    `The graphs take ${x(host.cpuMs, graph.cpuMs)}x less CPU time per update than the TypeScript kernels (${x(host.totalMs, graph.totalMs)}x less wall time).`,
  ].join('\n');
}
