/**
 * Full-depth LoRA on the CPU against the head adapter and against plain scoring, side by side on
 * the bench model (hidden 512, 8 layers, 8 heads / 2 kv heads, vocabulary 8192) in Node:
 *
 * 1. One group of 4 completions x 32 tokens (prompt of ~20 tokens): onnxruntime's scoring pass
 *    (scoreCompletions), the LoRA engine's forward of the same tokens (loraLogprobs), and a full
 *    LoRA train step (forward, grpoLoss, backward to every A and B of rank 8 on all seven
 *    projections of every layer, AdamW) with and without activation recomputation; the head
 *    adapter's train step (lib/grad, rank 8) on the same group.
 * 2. Activation memory the LoRA passes hold between forward and backward, measured as the growth
 *    of ArrayBuffer memory, per completion token.
 * 3. The cost of making the sampler follow the adapter: merging W + s A^T B^T into a copy of the
 *    graph's initializers (mergeLoraIntoOnnx) and building a new onnxruntime session from it.
 * 4. In Chromium: one group's forward and backward on the CPU engine in the tab and on the WebGPU
 *    engine (WGSL, lib/lora/webgpu), same tokens, on the bench model and on the bundled one.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLoraAdapter, loraParameterCount, zerosLike, type LoraAdapter } from '../../lib/lora/adapter.js';
import { loraGroupForward } from '../../lib/lora/model.js';
import { mergeLoraIntoOnnx } from '../../lib/lora/onnx-merge.js';
import { readDecoderWeights } from '../../lib/lora/onnx-weights.js';
import { groupRolloutBatch } from '../../lib/grad/rollouts.js';
import { loraEngine } from '../../lib/train/lora-engine.js';
import { GrpoTrainer } from '../../lib/train/trainer.js';
import type { DecoderWeights } from '../../lib/lora/weights.js';
import { mulberry32 } from '../../lib/math/random.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { BENCH, BENCH_MODEL_URL, buildModel, MODEL_DIRS } from '../build-model/index.js';
import { callBench, inChromium } from './_chromium.js';
import { measureTrainStep } from './_grad-measure.js';
import { ms } from './_measure.js';

const GROUP = 4;
const NEW_TOKENS = 32;
const RANK = 8;
const PROMPT = 'Answer with digits only: what is 7 x 6?';
const TINY_DIR = fileURLToPath(new URL('../../public/models/webgrpo-tiny', import.meta.url));

interface Folder {
  weights: DecoderWeights;
  bytes: Uint8Array;
}

async function readFolder(dir: string): Promise<Folder> {
  const bytes = new Uint8Array(await readFile(join(dir, 'onnx/model.onnx')));
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  return { weights: await readDecoderWeights(bytes, { config }), bytes };
}

function moved(weights: DecoderWeights, seed: number): LoraAdapter {
  const adapter = createLoraAdapter(weights.shape, { r: RANK, alpha: 16, seed });
  const rng = mulberry32(seed + 1);
  for (const layer of adapter.layers) for (const pair of Object.values(layer)) for (let i = 0; i < pair.B.length; i++) pair.B[i] = (2 * rng() - 1) * 0.01;
  return adapter;
}

/**
 * Wall time and CPU time (user + system, every thread of the process). On a shared machine the
 * wall time of a single-threaded loop measures its neighbours too; its CPU time does not. For
 * onnxruntime's thread pool the CPU time is the work of all its threads (core-milliseconds).
 */
interface Cost {
  ms: number;
  cpuMs: number;
}

function time<T>(fn: () => T): Cost & { value: T } {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const value = fn();
  const c = process.cpuUsage(c0);
  return { ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000, value };
}

async function timeAsync<T>(fn: () => Promise<T>): Promise<Cost & { value: T }> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const value = await fn();
  const c = process.cpuUsage(c0);
  return { ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000, value };
}

/** The best of two runs: on a shared machine the slower one measures the neighbours. */
function best<T>(fn: () => T): Cost {
  const a = time(fn);
  const b = time(fn);
  return { ms: Math.min(a.ms, b.ms), cpuMs: Math.min(a.cpuMs, b.cpuMs) };
}

/** V8's collector, so held memory is measured without garbage from earlier work. */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Collects twice with a pause between: ArrayBuffer memory is released by a background sweeper. */
async function settle(): Promise<number> {
  gc();
  await new Promise((resolve) => setTimeout(resolve, 100));
  gc();
  await new Promise((resolve) => setTimeout(resolve, 100));
  return process.memoryUsage().arrayBuffers;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

interface Refresh {
  mergeMs: number;
  sessionMs: number;
  policyMs: number;
  megabytes: number;
}

/** Merge into a copy of the initializers, then a bare session and a whole policy from the bytes. */
async function refreshCost(dir: string): Promise<Refresh> {
  const { weights, bytes } = await readFolder(dir);
  const adapter = moved(weights, 3);
  const ort = await import('onnxruntime-node');
  const merges: number[] = [];
  const sessions: number[] = [];
  let merged = bytes;
  for (let i = 0; i < 3; i++) {
    const m = await timeAsync(() => mergeLoraIntoOnnx(bytes, weights, adapter));
    merges.push(m.ms);
    merged = m.value;
    const s = await timeAsync(() => ort.InferenceSession.create(merged));
    sessions.push(s.ms);
    await s.value.release();
  }
  const folder = await mkdtemp(join(tmpdir(), 'webgrpo-lora-bench-'));
  try {
    await cp(dir, folder, { recursive: true });
    await writeFile(join(folder, 'onnx/model.onnx'), merged);
    const p = await timeAsync(() => loadOnnxPolicy({ model: folder }));
    await p.value.dispose();
    return { mergeMs: median(merges), sessionMs: median(sessions), policyMs: p.ms, megabytes: bytes.length / 2 ** 20 };
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

export async function run(): Promise<string> {
  console.log('  building the bench model (npm run build:model -- --size bench)…');
  await buildModel(BENCH, MODEL_DIRS.bench);
  const { weights } = await readFolder(MODEL_DIRS.bench);

  console.log('  sampling a group and scoring it with onnxruntime…');
  const policy = await loadOnnxPolicy({ model: MODEL_DIRS.bench });
  const group = await policy.generateGroup({ prompt: PROMPT, groupSize: GROUP, maxNewTokens: NEW_TOKENS, seed: 1 });
  const promptIds = await policy.encode(PROMPT);
  const completions = group.completions.map((c) => c.tokenIds);
  const tokens = completions.reduce((n, c) => n + c.length, 0);
  const sequenceTokens = promptIds.length + tokens;
  await policy.scoreCompletions({ prompt: PROMPT, completions });
  const ortScore: Cost[] = [];
  for (let i = 0; i < 3; i++) ortScore.push(await timeAsync(() => policy.scoreCompletions({ prompt: PROMPT, completions })));
  await policy.dispose();

  const adapter = moved(weights, 7);
  // Warm the JIT on a short sequence.
  loraGroupForward(weights, adapter, { promptIds: promptIds.slice(0, 4), completions: [promptIds.slice(4, 8)] });

  console.log('  LoRA engine: forward of the group…');
  const forward = best(() => loraGroupForward(weights, adapter, { promptIds, completions }, { recompute: true }));

  const rollouts = groupRolloutBatch([{ completions: group.completions, rewards: completions.map((_, i) => (i % 2 === 0 ? 1 : 0)) }]);
  const steps: Record<string, Cost & { heldBytes: number }> = {};
  for (const recompute of [false, true]) {
    console.log(`  LoRA engine: train step (recompute ${recompute})…`);
    // Held activations: ArrayBuffer growth while every pass of the group waits for its backward.
    const before = await settle();
    const pass = loraGroupForward(weights, adapter, { promptIds, completions }, { recompute });
    const heldBytes = (await settle()) - before;
    pass.backward(pass.logprobs.map((row) => row.map(() => 0.01)), zerosLike(adapter));
    const trainer = new GrpoTrainer(loraEngine({ weights, adapter, promptIds: () => promptIds }, { recompute }), { lr: 1e-4 }, { numGenerations: GROUP, beta: 0, entropyCoeff: 0 });
    const step = () => trainer.trainStep(rollouts, [{ prompt: PROMPT }]);
    const [a, b] = [await timeAsync(step), await timeAsync(step)];
    steps[String(recompute)] = { ms: Math.min(a.ms, b.ms), cpuMs: Math.min(a.cpuMs, b.cpuMs), heldBytes };
  }

  console.log('  head adapter: train step on the same shapes…');
  const hidden = await loadOnnxPolicy({ model: MODEL_DIRS.bench, hiddenState: true });
  const head = await measureTrainStep(hidden, { groups: 1, groupSize: GROUP, newTokens: NEW_TOKENS, prompt: PROMPT, repeats: 2 });
  await hidden.dispose();

  console.log('  refresh cost: merge and new session (bundled and bench model)…');
  const refresh = { tiny: await refreshCost(TINY_DIR), bench: await refreshCost(MODEL_DIRS.bench) };

  console.log('  Chromium: CPU engine and WebGPU engine (SwiftShader), bench and bundled model…');
  const tinyPolicy = await loadOnnxPolicy({ model: TINY_DIR });
  const tinyGroup = await tinyPolicy.generateGroup({ prompt: PROMPT, groupSize: GROUP, maxNewTokens: NEW_TOKENS, seed: 1 });
  const tinyInput = { promptIds: await tinyPolicy.encode(PROMPT), completions: tinyGroup.completions.map((c) => c.tokenIds) };
  await tinyPolicy.dispose();
  // The bundled model first: its warm-up round warms the tab's JIT for the bench model's single run.
  const browser = await inChromium('/scripts/bench/pages/lora.html', async (page) => {
    const tiny = await callBench<EngineSteps>(page, 'step', '/models/webgrpo-tiny', tinyInput, RANK, 3, true);
    const bench = await callBench<EngineSteps>(page, 'step', BENCH_MODEL_URL, { promptIds, completions }, RANK, 1, false);
    return { tiny, bench };
  });
  return report({
    browser,
    tinyTokens: tinyInput.completions.reduce((n, c) => n + c.length, 0), tokens, sequenceTokens, promptTokens: promptIds.length, ortScore: { ms: median(ortScore.map((c) => c.ms)), cpuMs: median(ortScore.map((c) => c.cpuMs)) }, forward, steps, head, refresh, parameters: loraParameterCount(adapter) });
}

interface EngineSteps {
  cpu: { forwardMs: number; stepMs: number };
  webgpu: { forwardMs: number; stepMs: number };
}

function report(r: {
  browser: { bench: EngineSteps; tiny: EngineSteps };
  tinyTokens: number;
  tokens: number;
  sequenceTokens: number;
  promptTokens: number;
  ortScore: Cost;
  forward: Cost;
  steps: Record<string, Cost & { heldBytes: number }>;
  head: { firstMs: number; againMs: number; tokens: number };
  refresh: { tiny: Refresh; bench: Refresh };
  parameters: number;
}): string {
  const kb = (bytes: number) => (bytes / r.tokens / 1024).toFixed(0);
  const x = (a: number, b: number) => (a / b).toFixed(2);
  const row = (name: string, c: Cost, held = '') =>
    `| ${name} | ${ms(c.ms)} | ${ms(c.cpuMs)} | ${ms(c.cpuMs / r.tokens)} | ${x(c.cpuMs, r.ortScore.cpuMs)} | ${x(c.cpuMs, r.forward.cpuMs)} | ${held} |`;
  const plain = r.steps.false;
  const recomputed = r.steps.true;
  const lines = [
    '## Full-depth LoRA (CPU engine, Node)',
    '',
    `Bench model (28M parameters), one group of ${GROUP} completions x ${NEW_TOKENS} tokens after a ${r.promptTokens}-token prompt ` +
      `(${r.tokens} completion tokens; the prompt runs once, so ${r.sequenceTokens} rows go through the decoder, on both engines). LoRA rank ${RANK} on all seven projections of all 8 layers ` +
      `(${(r.parameters / 1e6).toFixed(2)}M trainable parameters); head adapter rank ${RANK} on the LM head. ` +
      'Ratios are of CPU time (user + system over all threads: core-milliseconds), which the other work on a shared machine does not inflate; wall time beside it.',
    '',
    '| | wall ms | CPU ms | CPU ms per completion token | x onnxruntime scoring | x LoRA forward | activations held, KiB per completion token |',
    '|---|---:|---:|---:|---:|---:|---:|',
    row('onnxruntime scoring pass (scoreCompletions)', r.ortScore),
    row('LoRA engine forward (loraGroupForward)', r.forward),
    row('LoRA train step, activations kept', plain, kb(plain.heldBytes)),
    row('LoRA train step, recomputed per layer', recomputed, kb(recomputed.heldBytes)),
    '',
    `Head adapter (lib/grad, wall time only): a train step on the same group (frozen forward + update) ${ms(r.head.firstMs)} ms, ` +
      `${ms(r.head.firstMs / r.head.tokens)} ms per completion token; a further update on the same batch ${ms(r.head.againMs)} ms.`,
    '',
    'Sampling from the adapted model: the merged weights W + s A^T B^T written into a copy of the ONNX initializers, then a new session (median of 3; the whole policy once), wall time.',
    '',
    '| model | ONNX file, MiB | merge (mergeLoraIntoOnnx), ms | new onnxruntime session, ms | new policy from a folder, ms |',
    '|---|---:|---:|---:|---:|',
    ...(['tiny', 'bench'] as const).map((k) => {
      const f = r.refresh[k];
      return `| ${k === 'tiny' ? 'bundled (0.8M)' : 'bench (28M)'} | ${f.megabytes.toFixed(1)} | ${ms(f.mergeMs)} | ${ms(f.sessionMs)} | ${ms(f.policyMs)} |`;
    }),
    '',
    'The LoRA engine is single-threaded JavaScript (float64 sums over float32 weights and activations); onnxruntime runs SIMD kernels. ' +
      'The "x LoRA forward" column is the step-to-forward ratio within one engine (the 3x goal); the "x onnxruntime" column is the distance the WebGPU engine has to close. ' +
      'The backward needs no base-weight gradients, so it costs about one forward; recomputation adds a second forward for the memory it saves.',
    '',
    '### In Chromium: the CPU engine in the tab against the WebGPU engine (WGSL)',
    '',
    `One group's forward and backward to every A and B (no optimizer, which is the same CPU code on both), activations kept on both engines, the same tokens; wall time, best of 3 runs after a warm-up on the bundled model, then 1 run on the bench model (SwiftShader takes minutes per bench-model step). ` +
      `The bundled model (0.8M parameters) scores its own ${GROUP} completions of the same prompt (${r.tinyTokens} completion tokens).`,
    '',
    '| model | engine | forward, ms | forward + backward, ms | step x forward | WebGPU step x CPU step |',
    '|---|---|---:|---:|---:|---:|',
    ...(['bench', 'tiny'] as const).flatMap((k) => {
      const e = r.browser[k];
      const name = k === 'bench' ? 'bench (28M)' : 'bundled (0.8M)';
      return [
        `| ${name} | CPU (TypeScript in the tab) | ${ms(e.cpu.forwardMs)} | ${ms(e.cpu.stepMs)} | ${x(e.cpu.stepMs, e.cpu.forwardMs)} | |`,
        `| ${name} | WebGPU (SwiftShader), WGSL | ${ms(e.webgpu.forwardMs)} | ${ms(e.webgpu.stepMs)} | ${x(e.webgpu.stepMs, e.webgpu.forwardMs)} | ${x(e.webgpu.stepMs, e.cpu.stepMs)} |`,
      ];
    }),
    '',
    "SwiftShader is Chromium's software WebGPU: the WGSL kernels run on this machine's two shared CPU cores through an emulation layer, so these rows show that the kernels run at the bench model's shapes and what they cost without a GPU. They say nothing about speed on a real GPU.",
  ];
  return lines.join('\n');
}
