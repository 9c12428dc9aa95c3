/**
 * Group sampling with log-probs: webgrpo's `generateGroup` against transformers.js `generate()` on
 * G copies of the prompt followed by a scoring pass, side by side in one run, in Node (CPU) and in
 * Chromium (WASM; WebGPU on SwiftShader for completeness). Each implementation runs in its own
 * Node process or browser, so peak memory is its own; a warm-up group runs first.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { launchChromium } from '../../test/browser/launch.js';
import { BENCH, BENCH_MODEL_URL, buildModel, MODEL_DIRS } from '../build-model/index.js';
import { openReadyPage, READY_TIMEOUT_MS, withBenchServer } from './_chromium.js';
import { ms } from './_measure.js';
import type { BenchCase, Measurement } from './_onnx-measure.js';

const exec = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const benchDir = MODEL_DIRS.bench;

const PROMPT = 256;
const NEW = 64;
const G = 8;
const SCALING = [1, 4, 16];
const SEED = 1;
/** SwiftShader runs WebGPU on the CPU (about 8 s per decode step of the bench model): a smaller setting. */
const GPU = { model: '/models/webgrpo-tiny', prompt: 64, newTokens: 16 };

interface Side {
  measurements: Measurement[];
  peakBytes: number;
  /** webgrpo only: bytes of logits read back, and what whole rows would have cost. */
  transfer?: { readbackBytes: number; fullRowBytes: number; rows: number };
}

export async function run(): Promise<string> {
  // Rebuilt every run (about 3 s): an older build of the folder must not skew the numbers.
  console.log('  building the bench model (npm run build:model -- --size bench)…');
  await buildModel(BENCH, benchDir);
  const config = JSON.parse(await readFile(`${benchDir}/config.json`, 'utf8')) as Record<string, number>;
  // Every G runs twice and G = 8 three times, spread out; the fastest run of each is reported, as the
  // machine may be shared.
  const cases: BenchCase[] = [G, ...SCALING, G, ...SCALING, G].map((groupSize) => ({ groupSize, newTokens: NEW, seed: SEED }));
  const main: BenchCase[] = [{ groupSize: G, newTokens: NEW, seed: SEED }];

  console.log('  Node: peak memory of each implementation alone, then both timed in turns…');
  const memory = { ours: await nodeChild('memory', 'webgrpo', main), theirs: await nodeChild('memory', 'transformers.js', main) };
  const timing = (await nodeChild('timing', 'both', cases)) as Record<Measurement['implementation'], Measurement[]>;
  const node = {
    ours: { measurements: fastestRuns(timing.webgrpo), peakBytes: memory.ours.peakRssBytes },
    theirs: { measurements: fastestRuns(timing['transformers.js']), peakBytes: memory.theirs.peakRssBytes },
  };

  return withBenchServer(async (base) => {
    const twice = [G, G].map((groupSize) => ({ groupSize, newTokens: NEW, seed: SEED }));
    console.log('  Chromium WASM: webgrpo, transformers.js…');
    const wasm = {
      ours: await browserSide(base, 'webgrpo', 'wasm', BENCH_MODEL_URL, PROMPT, twice),
      theirs: await browserSide(base, 'transformers.js', 'wasm', BENCH_MODEL_URL, PROMPT, twice),
    };
    const small = [G, G].map((groupSize) => ({ groupSize, newTokens: GPU.newTokens, seed: SEED }));
    console.log('  Chromium WebGPU (SwiftShader): webgrpo, transformers.js…');
    const gpu = {
      ours: await browserSide(base, 'webgrpo', 'webgpu', GPU.model, GPU.prompt, small),
      theirs: await browserSide(base, 'transformers.js', 'webgpu', GPU.model, GPU.prompt, small),
    };
    return report(config, node, wasm, gpu);
  });
}

/** Runs scripts/bench/_onnx-node.ts in a fresh Node process and returns what it printed. */
async function nodeChild(mode: 'memory', implementation: Measurement['implementation'], cases: BenchCase[]): Promise<{ peakRssBytes: number }>;
async function nodeChild(mode: 'timing', implementation: 'both', cases: BenchCase[]): Promise<unknown>;
async function nodeChild(mode: string, implementation: string, cases: BenchCase[]): Promise<unknown> {
  const tsx = `${root}node_modules/tsx/dist/cli.mjs`;
  const args = [tsx, `${root}scripts/bench/_onnx-node.ts`, mode, implementation, benchDir, JSON.stringify({ cases, promptTokens: PROMPT })];
  const { stdout } = await exec(process.execPath, args, { cwd: root, maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

/** One implementation in a fresh Chromium; peak memory = high-water RSS of its renderer and GPU processes. */
async function browserSide(
  base: string,
  implementation: Measurement['implementation'],
  device: 'wasm' | 'webgpu',
  modelUrl: string,
  promptTokens: number,
  cases: BenchCase[],
): Promise<Side> {
  const browser = await launchChromium();
  try {
    const page = await openReadyPage(browser, `${base}/scripts/bench/pages/onnx.html`, READY_TIMEOUT_MS);
    const warmup: BenchCase = { groupSize: 2, newTokens: 2, seed: 0 };
    const result = (await page.evaluate(
      ([i, d, m, p, c]) => (window as unknown as { bench: (...a: unknown[]) => Promise<unknown> }).bench(i, d, m, p, c),
      [implementation, device, modelUrl, promptTokens, [warmup, ...cases]] as const,
    )) as { measurements: Measurement[]; transfer?: Side['transfer'] };
    const cdp = await browser.newBrowserCDPSession();
    const { processInfo } = (await cdp.send('SystemInfo.getProcessInfo')) as { processInfo: Array<{ type: string; id: number }> };
    const peaks = await Promise.all(processInfo.filter((p) => p.type === 'renderer' || p.type === 'GPU').map((p) => highWaterRss(p.id)));
    return { ...result, measurements: fastestRuns(result.measurements), peakBytes: peaks.reduce((a, b) => a + b, 0) };
  } finally {
    await browser.close();
  }
}

/** The fastest run of each group size, G = 8 first, then the scaling sizes in order. */
function fastestRuns(measurements: Measurement[]): Measurement[] {
  return [G, ...SCALING].flatMap((g) => {
    const runs = measurements.filter((m) => m.groupSize === g).sort((a, b) => a.totalMs - b.totalMs);
    return runs.length > 0 ? [runs[0]] : [];
  });
}

async function highWaterRss(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  } catch {
    return 0; // a helper process that already exited
  }
}

function report(
  config: Record<string, number>,
  node: { ours: Side; theirs: Side },
  wasm: { ours: Side; theirs: Side },
  gpu: { ours: Side; theirs: Side },
): string {
  const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
  const row = (runtime: string, side: Side, other: Side, label: string, memory: string) => {
    const m = side.measurements[0];
    const speedup = m.tokensPerSecond / other.measurements[0].tokensPerSecond;
    return `| ${runtime} | ${label} | ${ms(m.prefillMs)} ms | ${ms(m.totalMs)} ms | ${m.tokens} | ${m.tokensPerSecond.toFixed(1)} | ${memory} | **${speedup.toFixed(2)}x** |`;
  };
  const pair = (runtime: string, sides: { ours: Side; theirs: Side }, memory: (s: Side) => string) => [
    row(runtime, sides.ours, sides.theirs, 'webgrpo `generateGroup`', memory(sides.ours)),
    row(runtime, sides.theirs, sides.theirs, 'transformers.js `generate()` + scoring pass', memory(sides.theirs)),
  ];
  const scaling = [G, ...SCALING]
    .map((g, i) => ({ g, ours: node.ours.measurements[i], theirs: node.theirs.measurements[i] }))
    .sort((a, b) => a.g - b.g)
    .map(({ g, ours, theirs }) => `| ${g} | ${ms(ours.totalMs)} ms | ${ours.tokensPerSecond.toFixed(1)} | ${ms(theirs.totalMs)} ms | ${theirs.tokensPerSecond.toFixed(1)} | ${(ours.tokensPerSecond / theirs.tokensPerSecond).toFixed(2)}x |`);
  const transfer = gpu.ours.transfer!;
  const vocab = config.vocab_size;
  const params = (BENCH.numLayers * (2 * BENCH.hiddenSize * BENCH.numHeads * BENCH.headDim + 2 * BENCH.hiddenSize * BENCH.numKvHeads * BENCH.headDim + 3 * BENCH.hiddenSize * BENCH.intermediateSize) + vocab * BENCH.hiddenSize) / 1e6;

  return `## onnx: group sampling with log-probs

Bench model (\`npm run build:model -- --size bench\`): Llama architecture, ${params.toFixed(1)}M parameters, ${BENCH.numLayers} layers,
${BENCH.numHeads} query / ${BENCH.numKvHeads} key-value heads, vocabulary ${vocab}, fp32, seeded random weights. One group of
G = ${G} completions of a ${PROMPT}-token prompt, ${NEW} new tokens, temperature 1, no filters, the same seed on
both sides. The bench model declares no end token, so every row generates all ${NEW} tokens on both sides
(with end tokens, transformers.js would also keep sampling rows that ended until all have). Both
sides end with per-token log-probs: webgrpo returns them from sampling; transformers.js
\`generate()\` returns none, so a forward pass over the generated sequences computes them.
Prefill = time to the first sampled token. After a warm-up group, G = ${G} runs three times (Node)
or twice (Chromium) per implementation, other sizes twice, and the fastest run is shown. In Node
both implementations share one process and take turns on every case (a busy neighbour slows both
alike); peak memory comes from separate processes running one implementation each. In Chromium each implementation gets its own
browser; peak memory is the high-water resident set of its renderer and GPU processes.

| Runtime | Implementation | Prefill | Total | Tokens | Tokens/s | Peak memory | Speed-up |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |
${[
  ...pair('Node, CPU (onnxruntime-node)', node, (s) => `${mb(s.peakBytes)} RSS`),
  ...pair('Chromium, WASM', wasm, (s) => `${mb(s.peakBytes)} RSS`),
].join('\n')}

How time scales with G (Node, CPU; same prompt and length):

| G | webgrpo total | webgrpo tokens/s | transformers.js total | transformers.js tokens/s | Speed-up |
| ---: | ---: | ---: | ---: | ---: | ---: |
${scaling.join('\n')}

WebGPU, for completeness: Chromium's WebGPU here is SwiftShader, which emulates the GPU on the CPU
(about 8 s per decode step of the bench model), so these rows use the bundled tiny model, a
${GPU.prompt}-token prompt and ${GPU.newTokens} new tokens. The tiny model has end tokens: Tokens counts each row up to
and including its end token (transformers.js samples on until every row has ended). These rows show
that the path works; they say nothing about GPU speed.

| Runtime | Implementation | Prefill | Total | Tokens | Tokens/s | Peak memory | Speed-up |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |
${pair('Chromium, WebGPU (SwiftShader)', gpu, (s) => `${mb(s.peakBytes)} RSS`).join('\n')}

Logits read back to the CPU on WebGPU: webgrpo reduces each row on the GPU and maps back
${transfer.readbackBytes / transfer.rows} bytes per row (token, log-prob, sampled log-prob), measured over ${transfer.rows} rows in the run
above; the whole row is ${transfer.fullRowBytes / transfer.rows} bytes for the tiny model and ${vocab * 4} bytes (${(vocab * 4) / 1024} KiB) for the bench
vocabulary. A decode step of G = ${G} reads back ${(transfer.readbackBytes / transfer.rows) * G} bytes instead of ${(vocab * 4 * G) / 1024} KiB
(transformers.js downloads the full \`[G, 1, V]\` logits every step).`;
}
