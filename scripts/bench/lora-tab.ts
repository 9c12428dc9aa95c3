/**
 * The `lora` method's step in one Chromium tab on the training graphs (onnxruntime-web on the
 * policy's own backend), the same run on the bundled model: the policy on WebAssembly, then on
 * WebGPU (SwiftShader here), beside the removed TypeScript and WGSL engines' steps as this suite
 * recorded them; medians over the steps after the first. Then WebGPU's correctness against WASM:
 * one group's forward and backward through the graphs on both execution providers.
 */
import { callBench, inChromium } from './_chromium.js';

const SHAPE = { groupSize: 8, batchSize: 2, maxNewTokens: 8, epochs: 1, seed: 1 };
const STEPS = 4;
const RANK = 8;

interface Phases {
  sampleMs: number;
  trainMs: number;
  refreshMs: number;
  stepMs: number;
  tokens: number;
}
interface Measured {
  engine: string;
  backend: string;
  rows: Phases[];
}
interface Sampling {
  baseMs: number;
  followedMs: number;
}
interface Agreement {
  tokens: number;
  logprobs: number;
  entropies: number;
  gradError: number;
}

/**
 * The removed engines' rows as `npm run bench -- lora-tab` recorded them on 2026-12-01 (same shape,
 * same machine): the TypeScript engine in the tab beside a WASM policy, and the WGSL engine on
 * the policy's WebGPU device (SwiftShader).
 */
const RECORDED: Array<{ label: string; trains: string; phases: Phases }> = [
  { label: 'WebAssembly', trains: 'recorded 2026-12-01: the TypeScript engine in the tab (removed)', phases: { tokens: 123, sampleMs: 74, trainMs: 1251, refreshMs: 102, stepMs: 1412 } },
  { label: 'WebGPU (SwiftShader)', trains: "recorded 2026-12-01: the WGSL engine on the policy's device (removed)", phases: { tokens: 123, sampleMs: 3025, trainMs: 12923, refreshMs: 73, stepMs: 16164 } },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function summary(rows: Phases[]): Phases {
  const later = rows.length > 1 ? rows.slice(1) : rows;
  const pick = (key: keyof Phases) => median(later.map((r) => r[key]));
  return { sampleMs: pick('sampleMs'), trainMs: pick('trainMs'), refreshMs: pick('refreshMs'), stepMs: pick('stepMs'), tokens: pick('tokens') };
}

export async function run(): Promise<string> {
  const cases = [
    { device: 'wasm', label: 'WebAssembly', trains: "the graphs on onnxruntime-web's WASM kernels" },
    { device: 'webgpu', label: 'WebGPU (SwiftShader)', trains: "the graphs on onnxruntime-web's WebGPU execution provider" },
  ];
  const { measured, agreement } = await inChromium('/scripts/bench/pages/lora-run.html', async (page) => {
    const out: Array<(typeof cases)[number] & { phases: Phases; got: Measured; sampling: Sampling }> = [];
    for (const c of cases) {
      console.log(`  policy on ${c.device}…`);
      const got = await callBench<Measured>(page, 'run', c.device, SHAPE, STEPS);
      const sampling = await callBench<Sampling>(page, 'sampling', c.device, SHAPE, RANK, 3);
      out.push({ ...c, phases: summary(got.rows), got, sampling });
    }
    console.log('  WebGPU against WASM, one group through the graphs…');
    return { measured: out, agreement: await callBench<Agreement>(page, 'compare', RANK) };
  });
  const typescript = RECORDED[0].phases;
  const f = (x: number) => x.toFixed(0);
  const row = (label: string, trains: string, engine: string, p: Phases) =>
    `| ${label} | ${trains} | ${engine} | ${p.tokens} | ${f(p.sampleMs)} | ${f(p.trainMs)} | ${f(p.refreshMs)} | ${f(p.stepMs)} | ${(p.trainMs / typescript.trainMs).toFixed(2)} | ${(p.stepMs / typescript.stepMs).toFixed(2)} |`;
  const [wasm, webgpu] = measured;
  const e = (x: number) => x.toExponential(1);
  return `## lora-tab: the lora method's step in one Chromium tab, on the training graphs

The lora method (\`loraGrpo\`) on the bundled model (0.8M) in headless Chromium, per driver step: ${SHAPE.batchSize} items x ${SHAPE.groupSize} completions of up to ${SHAPE.maxNewTokens} tokens (digits task), one update per step, LoRA rank ${RANK} on all seven projections of every layer. Phases cut at the run's events (sampling: step-start to the last rewards; update: to the train event; refresh: the step's \`refreshMs\`, handing the updated A and B to the sampler), wall ms, medians over ${STEPS - 1} steps after the first. The measured rows train on onnxruntime's graphs on the policy's own backend; the recorded rows are the removed engines' as this suite measured them on 2026-12-01 (same shape and machine, another day's load: read their ratios as the engines' difference to within the machine's noise).

| policy samples on | adapter trains on | engine | tokens trained | sampling ms | update ms | refresh ms | step ms | update x TypeScript engine | step x TypeScript engine |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|
${row(wasm.label, wasm.trains, wasm.got.engine, wasm.phases)}
${row(RECORDED[0].label, RECORDED[0].trains, 'cpu', RECORDED[0].phases)}
${row(webgpu.label, webgpu.trains, webgpu.got.engine, webgpu.phases)}
${row(RECORDED[1].label, RECORDED[1].trains, 'webgpu', RECORDED[1].phases)}

**Sampling under the adapter.** The method's sampler follows the adapter as graph inputs (every adapted projection computes its rank-${RANK} side product per token) where the removed engines' runs sampled merged weights. One group of ${SHAPE.groupSize} x ${SHAPE.maxNewTokens} tokens in the same tab, the base graph against the same policy following an adapter, median of 3: on WebAssembly ${f(wasm.sampling.baseMs)} ms against ${f(wasm.sampling.followedMs)} ms (${(wasm.sampling.followedMs / wasm.sampling.baseMs).toFixed(2)}x), on WebGPU (SwiftShader) ${f(webgpu.sampling.baseMs)} ms against ${f(webgpu.sampling.followedMs)} ms (${(webgpu.sampling.followedMs / webgpu.sampling.baseMs).toFixed(2)}x). The base-graph time is what merged weights sample at, so the sampling column's difference from the recorded rows is the side products plus the machine's load on the day.

**WebGPU against WASM, correctness.** One group (4 completions, ${agreement.tokens} tokens) of the bundled model through the LoRA training graphs on both execution providers, rank ${RANK}, B moved off zero, the same d loss / d logp: log-probs differ by at most ${e(agreement.logprobs)}, entropies by ${e(agreement.entropies)}, and every A and B gradient by at most ${e(agreement.gradError)} of its tensor's largest entry (the suite's tolerances between WebGPU and WASM: 1e-3 for log-probs, 1e-4 relative for the gradients: ${agreement.logprobs < 1e-3 && agreement.gradError < 1e-4 ? 'within both' : 'NOT within them'}).

Chromium's WebGPU here is SwiftShader, a CPU implementation of WebGPU on this machine's two shared cores: the WebGPU rows show the path working in a tab and what it costs without a GPU. They say nothing about speed on a real GPU.`;
}
