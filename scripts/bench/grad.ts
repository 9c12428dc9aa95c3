/**
 * Gradient GRPO's train step on the head graphs, on each backend, side by side in one run:
 *
 * 1. The adapter's update (forward with the adapted and reference log-probs, backward to dA and dB,
 *    AdamW) on the bench model's shapes (hidden 512, vocabulary 8192, rank 8) for a generation
 *    batch of 2 groups x 8 completions x 64 tokens: the head graphs on onnxruntime in Node and in Chromium (WASM, and
 *    onnxruntime-web's WebGPU execution provider on SwiftShader).
 * 2. Whole train steps on a real batch of the bench model (Node CPU, Chromium WASM): the first
 *    update on a batch runs the frozen model over prompt + completions, further ones (TRL's
 *    num_iterations) reuse its states; on WebGPU the bundled tiny model, as SwiftShader takes
 *    seconds per forward pass of the bench model.
 */
import { readFile } from 'node:fs/promises';
import { createAdapterWeights } from '../../lib/train/head/adapter.js';
import * as ort from 'onnxruntime-node';
import { HeadGraphs } from '../../lib/train/graph/head-graphs.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { BENCH, BENCH_MODEL_URL, buildModel, MODEL_DIRS } from '../build-model/index.js';
import { callBench, inChromium } from './_chromium.js';
import { measureEngine, measureTrainStep, type EnginePhases, type StepTiming } from './_grad-measure.js';
import { ms } from './_measure.js';

const benchDir = MODEL_DIRS.bench;
const RANK = 8;
const TOKENS = 2 * 8 * 64;
const REPEATS = 3;
const STEP = { groups: 2, groupSize: 8, newTokens: 64, prompt: 'Answer with digits only, please: what is six times seven?', repeats: REPEATS };
/** SwiftShader: the tiny model and shorter completions. */
const GPU_STEP = { ...STEP, newTokens: 16 };

export async function run(): Promise<string> {
  console.log('  building the bench model (npm run build:model -- --size bench)…');
  await buildModel(BENCH, benchDir);
  const config = JSON.parse(await readFile(`${benchDir}/config.json`, 'utf8')) as Record<string, number>;
  const shape = { hiddenSize: config.hidden_size, vocabSize: config.vocab_size, rank: RANK, scale: 2 };

  console.log('  Node: head graphs on onnxruntime-node, then whole train steps…');
  const rssBefore = process.memoryUsage().rss;
  const nodeEngine = await measureEngine(new HeadGraphs(createAdapterWeights(shape, 1), async () => ort as unknown as GraphRuntime), TOKENS, REPEATS);
  const policy = await loadOnnxPolicy({ model: benchDir, hiddenState: true });
  const nodeStep = await measureTrainStep(policy, STEP);
  await policy.dispose();
  const nodeRss = process.memoryUsage().rss - rssBefore;

  return inChromium('/scripts/bench/pages/grad.html', async (page) => {
    console.log('  Chromium: head graphs on onnxruntime-web (WASM, WebGPU on SwiftShader)…');
    const browserCpu = await callBench<EnginePhases>(page, 'engine', 'cpu', shape, TOKENS, REPEATS);
    const browserGpu = await callBench<EnginePhases & { gpuPeakBytes: number }>(page, 'engine', 'webgpu', shape, TOKENS, REPEATS);
    console.log('  Chromium: whole train steps on WASM (bench model) and WebGPU (tiny model)…');
    const wasmStep = await callBench<StepTiming>(page, 'trainStep', 'wasm', BENCH_MODEL_URL, STEP);
    const gpuStep = await callBench<StepTiming>(page, 'trainStep', 'webgpu', '/models/webgrpo-tiny', GPU_STEP);
    return report(shape, { nodeEngine, browserCpu, browserGpu }, { nodeStep, wasmStep, gpuStep }, nodeRss);
  });
}

function report(
  shape: { hiddenSize: number; vocabSize: number; rank: number },
  engines: { nodeEngine: EnginePhases; browserCpu: EnginePhases; browserGpu: EnginePhases & { gpuPeakBytes: number } },
  steps: { nodeStep: StepTiming; wasmStep: StepTiming; gpuStep: StepTiming },
  nodeRss: number,
): string {
  const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  const { nodeEngine, browserCpu, browserGpu } = engines;
  const engineRow = (runtime: string, e: EnginePhases, memory: string, reference: EnginePhases) =>
    `| ${runtime} | ${ms(e.forwardMs)} ms | ${ms(e.backwardMs)} ms | ${ms(e.stepMs)} ms | **${ms(e.totalMs)} ms** | ${(reference.totalMs / e.totalMs).toFixed(2)}x | ${memory} |`;
  const stepRow = (runtime: string, model: string, s: StepTiming) => `| ${runtime} | ${model} | ${s.tokens} | ${ms(s.firstMs)} ms | ${ms(s.againMs)} ms |`;
  const adapterBytes = (shape.hiddenSize * shape.rank + shape.rank * shape.vocabSize) * 4;
  return `## grad: gradient GRPO train step on the head graphs, Node, WASM and WebGPU

The adapter's update on the bench model's shapes (hidden ${shape.hiddenSize}, vocabulary ${shape.vocabSize}, rank ${shape.rank}) for
one generation batch of 2 groups x 8 completions x 64 tokens = ${TOKENS} tokens, with random token states
(the frozen model's logits and hidden states, which a train step keeps: ${mib(nodeEngine.stateBytes)}). Forward = adapted
and reference log-probs and entropies of every token; backward = dA, dB and the gradient norm;
AdamW = clipping and the update, timed until the new weights can be read back. Medians of ${REPEATS} after a
warm-up. "Chromium, head graphs" are the same ONNX graphs as in Node, on onnxruntime-web's WASM
kernels in the page (the path of a policy on WebAssembly).

| Runtime | Forward | Backward | AdamW | Adapter update | vs Node CPU | Memory |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
${engineRow('Node, head graphs (onnxruntime-node)', nodeEngine, `${mib(nodeEngine.stateBytes)} states + ${mib(adapterBytes * 4)} weights, moments, gradients`, nodeEngine)}
${engineRow('Chromium, head graphs (onnxruntime-web WASM)', browserCpu, 'as Node', nodeEngine)}
${engineRow("Chromium, head graphs (onnxruntime-web's WebGPU EP on SwiftShader)", browserGpu, 'host states, fed per call', nodeEngine)}

SwiftShader is Chromium's software WebGPU: onnxruntime-web's WebGPU kernels run on the CPU cores
(here the same two, through an emulation layer), so this row shows the graphs run there and what
they cost without a GPU; it says nothing about speed on a real GPU. The WGSL engine this row
measured before (6658 ms an update, 0.21x Node, on 2026-11-30) was removed with the other
hand-written training kernels.

Whole train steps on a real batch (the bench model's own completions, G = 8, ${STEP.newTokens} new tokens, 2 groups).
The first update on a batch runs the frozen model over prompt + completions (once: its states are
kept) and then the adapter's update; a further update on the same batch (TRL's num_iterations) is
the adapter's part only.

| Runtime | Model | Tokens | First update on a batch | Further update |
| --- | --- | ---: | ---: | ---: |
${stepRow('Node, CPU', 'bench', steps.nodeStep)}
${stepRow('Chromium, WASM', 'bench', steps.wasmStep)}
${stepRow('Chromium, WebGPU (SwiftShader)', `tiny, ${GPU_STEP.newTokens} new tokens`, steps.gpuStep)}

Node's resident memory grew by ${mib(nodeRss)} over the Node part (bench model loaded twice by then, with its
hidden state exposed, plus the batch's states).`;
}
