/**
 * The LoRA train step on onnxruntime's kernels (lib/train/graph) against an onnxruntime scoring
 * pass of the same tokens, on the bench model
 * (hidden 512, 8 layers, 8 heads / 2 kv heads, vocabulary 8192) in Node, in CPU time:
 *
 *   scoring     policy.scoreCompletions (transformers.js on onnxruntime-node; the prompt once)
 *   graph fwd   the training forward graph (log-probs and entropies, A/B as inputs)
 *   graph step  GrpoTrainer over loraEngine({ graph }): forward graph, grpoLoss, backward graph to
 *               every A and B, AdamW
 *
 * The decoder is found in the export by its structure (findDecoder). CPU time is user + system of
 * every thread of the process (process.cpuUsage): the machine is shared, and wall time would
 * measure the neighbours too; the wall time is reported beside it.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import * as ort from 'onnxruntime-node';
import { createLoraAdapter, loraParameterCount, type LoraAdapter } from '../../lib/lora/adapter.js';
import { mergeLoraIntoOnnx } from '../../lib/lora/onnx-merge.js';
import type { DecoderWeights } from '../../lib/weights/decoder.js';
import { mulberry32 } from '../../lib/math/random.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { findDecoder } from '../../lib/policy/onnx/structure/find-decoder.js';
import { LoraGraphs } from '../../lib/train/graph/lora-graph-engine.js';
import { groupRolloutBatch } from '../../lib/train/rollouts.js';
import { GrpoConfig } from '../../lib/math.js';
import { loraEngine, type LoraEngineOptions } from '../../lib/train/lora-engine.js';
import { GrpoTrainer } from '../../lib/train/trainer.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { BENCH, buildModel, MODEL_DIRS } from '../build-model/index.js';
import { measureCpu, ms, type Cost } from './_measure.js';

/** The TypeScript engine's train step (GrpoTrainer over the CPU engine, activations kept) as this suite last measured it on 2026-12-02, before it was removed. */
const TYPESCRIPT_STEP = { ms: 66723, cpuMs: 12110 };
const GROUP = 4;
const NEW_TOKENS = 32;
const RANK = 8;
const PROMPT = 'Answer with digits only: what is 7 x 6?';

function moved(weights: DecoderWeights, seed: number): LoraAdapter {
  const adapter = createLoraAdapter(weights.shape, { r: RANK, alpha: 16, seed });
  const rng = mulberry32(seed + 1);
  for (const layer of adapter.layers) for (const pair of Object.values(layer)) for (let i = 0; i < pair.B.length; i++) pair.B[i] = (2 * rng() - 1) * 0.01;
  return adapter;
}

export async function run(): Promise<string> {
  console.log('  building the bench model…');
  await buildModel(BENCH, MODEL_DIRS.bench);
  const bytes = new Uint8Array(await readFile(join(MODEL_DIRS.bench, 'onnx/model.onnx')));
  const config = JSON.parse(await readFile(join(MODEL_DIRS.bench, 'config.json'), 'utf8')) as Record<string, unknown>;
  const weights = findDecoder(bytes, { config }) as DecoderWeights;

  console.log('  sampling a group and scoring it with onnxruntime…');
  const policy = await loadOnnxPolicy({ model: MODEL_DIRS.bench });
  const group = await policy.generateGroup({ prompt: PROMPT, groupSize: GROUP, maxNewTokens: NEW_TOKENS, seed: 1 });
  const promptIds = group.promptTokenIds;
  const completions = group.completions.map((c) => c.tokenIds);
  const tokens = completions.reduce((n, c) => n + c.length, 0);
  await policy.scoreCompletions({ prompt: PROMPT, completions });
  const scoring = await measureCpu(() => policy.scoreCompletions({ prompt: PROMPT, completions }), 5);

  console.log('  the sampler following an adapter: graph inputs against merged weights…');
  const followed = moved(weights, 11);
  const sample = () => policy.generateGroup({ prompt: PROMPT, groupSize: GROUP, maxNewTokens: NEW_TOKENS, seed: 2 });
  const merge = await measureCpu(async () => policy.replaceGraph(await mergeLoraIntoOnnx(bytes, weights, followed)), 3);
  const mergedSampling = await measureCpu(sample, 3);
  const firstFollow = await measureCpu(() => policy.followAdapter(followed), 1);
  const follow = await measureCpu(async () => {
    for (const layer of followed.layers) for (const pair of Object.values(layer)) pair.B.reverse();
    await policy.followAdapter(followed);
  }, 5);
  const followedSampling = await measureCpu(sample, 3);
  await policy.dispose();

  // The product's one update step (GrpoTrainer: grpoLoss, backward, AdamW) over each engine; the
  // batch is on policy (old log-probs from the graph forward), rewards alternate 1, 0.
  const trainerOn = (adapter: LoraAdapter, options: LoraEngineOptions) =>
    new GrpoTrainer(loraEngine({ weights, adapter, promptIds: () => promptIds }, options), { lr: 1e-4 }, new GrpoConfig({ numGenerations: GROUP, beta: 0, entropyCoeff: 0 }));
  const prompts = [{ prompt: PROMPT }];
  const graphGroups = [{ promptIds, completions }];

  console.log('  graph engine: building the sessions…');
  const graphAdapter = moved(weights, 7);
  const built = performance.now();
  const engine = await LoraGraphs.create(ort as unknown as GraphRuntime, weights, { r: RANK, scale: graphAdapter.scale, targetModules: graphAdapter.config.targetModules });
  const buildMs = performance.now() - built;
  const old = (await engine.forward(graphAdapter, graphGroups)).logprobs;
  const batch = groupRolloutBatch([{ completions: completions.map((tokenIds, c) => ({ tokenIds, logprobs: old[c] })), rewards: completions.map((_, i) => (i % 2 === 0 ? 1 : 0)) }]);
  const trainer = trainerOn(graphAdapter, { graph: engine });
  await trainer.trainStep(batch, prompts);
  console.log('  graph engine: forward and train step…');
  const graphForward = await measureCpu(() => engine.forward(graphAdapter, graphGroups), 5);
  const graphStep = await measureCpu(() => trainer.trainStep(batch, prompts), 5);
  trainer.dispose();

  console.log('  graph engine on onnxruntime-web (WASM, one thread, hosted by Node)…');
  const ortWeb = await import('onnxruntime-web');
  ortWeb.env.wasm.numThreads = 1;
  const wasmEngine = await LoraGraphs.create(ortWeb as unknown as GraphRuntime, weights, { r: RANK, scale: graphAdapter.scale, targetModules: graphAdapter.config.targetModules });
  const wasmTrainer = trainerOn(graphAdapter, { graph: wasmEngine });
  await wasmTrainer.trainStep(batch, prompts);
  const wasmForward = await measureCpu(() => wasmEngine.forward(graphAdapter, graphGroups), 3);
  const wasmStep = await measureCpu(() => wasmTrainer.trainStep(batch, prompts), 3);
  wasmTrainer.dispose();


  const x = (a: number, b: number) => (a / b).toFixed(2);
  const row = (name: string, c: Cost) => `| ${name} | ${ms(c.ms)} | ${ms(c.cpuMs)} | ${x(c.cpuMs, scoring.cpuMs)} | ${x(c.cpuMs, graphStep.cpuMs)} |`;
  return [
    "## LoRA train step on onnxruntime's kernels (graph engine, Node)",
    '',
    `Bench model (28M parameters), found in its ONNX graph by structure; one group of ${GROUP} completions x ${NEW_TOKENS} tokens after a ${promptIds.length}-token prompt (${tokens} completion tokens). ` +
      `LoRA rank ${RANK} on all seven projections of all 8 layers (${(loraParameterCount(graphAdapter) / 1e6).toFixed(2)}M trainable parameters). ` +
      `Every engine runs the prompt once: about ${promptIds.length + tokens} decoder rows. ` +
      'Ratios are of CPU time (user + system of every thread of the process, median of 5 runs): the machine is shared with other work, which wall time would measure too.',
    '',
    '| | wall ms | CPU ms | x onnxruntime scoring | x graph step |',
    '|---|---:|---:|---:|---:|',
    row('onnxruntime scoring pass (scoreCompletions)', scoring),
    row('graph engine forward (log-probs and entropies)', graphForward),
    row('graph engine train step (GrpoTrainer: forward, grpoLoss, backward to every A and B, AdamW)', graphStep),
    '',
    `The TypeScript engine this replaced (lib/lora, single-threaded JavaScript, removed with the WGSL one) took ${TYPESCRIPT_STEP.cpuMs} CPU ms a step here when this suite last measured it (2026-12-02): ${x(TYPESCRIPT_STEP.cpuMs, scoring.cpuMs)}x this run's scoring pass (recorded against measured).`,
    '',
    `On onnxruntime-web's WASM kernels (the tab's; here in Node, one thread, median of 3): forward ${ms(wasmForward.cpuMs)} ms and train step ${ms(wasmStep.cpuMs)} ms of CPU time, ` +
      `the step ${x(wasmStep.cpuMs, wasmForward.cpuMs)}x its forward (onnxruntime-node: ${x(graphStep.cpuMs, graphForward.cpuMs)}x) and ${x(wasmStep.cpuMs, graphStep.cpuMs)}x the onnxruntime-node step. ` +
      'Not measured here: the same in a Chromium tab, and a WASM scoring pass beside it.',
    '',
    `Building the two graphs and their onnxruntime sessions once: ${ms(buildMs)} ms wall. A and B are inputs of the graphs, fed on every call: an update needs no new graph.`,
    '',
    '### The sampler following the adapter (OnnxPolicy.followAdapter) against merging it',
    '',
    `After each update the sampler must use the new A and B. Merging writes W + s A^T B^T into a copy of the initializers and builds a new session (mergeLoraIntoOnnx + replaceGraph); following feeds A and B as inputs of a graph rewritten once (addLoraInputs). Median of ${3} merges, ${5} follows; sampling is one group of ${GROUP} x ${NEW_TOKENS} tokens under each (median of 3).`,
    '',
    '| | wall ms | CPU ms |',
    '|---|---:|---:|',
    `| merge + new session, per update | ${ms(merge.ms)} | ${ms(merge.cpuMs)} |`,
    `| follow, first call (rewrite the graph, new session) | ${ms(firstFollow.ms)} | ${ms(firstFollow.cpuMs)} |`,
    `| follow, per update | ${ms(follow.ms)} | ${ms(follow.cpuMs)} |`,
    `| sampling a group, merged weights | ${ms(mergedSampling.ms)} | ${ms(mergedSampling.cpuMs)} |`,
    `| sampling a group, adapter as inputs | ${ms(followedSampling.ms)} | ${ms(followedSampling.cpuMs)} |`,
    '',
    `Per update, following takes ${ms(follow.cpuMs)} ms of CPU time against the merge path's ${ms(merge.cpuMs)} ms (${(merge.cpuMs / follow.cpuMs).toFixed(0)}x less), and does not grow with the model's file; ` +
      `each sampled token pays for the rank-${RANK} side products instead: sampling under the inputs is ${x(followedSampling.cpuMs, mergedSampling.cpuMs)}x sampling merged weights.`,
  ].join('\n');
}
