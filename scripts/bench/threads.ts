/**
 * WebAssembly threads in the tab: the bench model sampled by a page whose onnxruntime-web runs a
 * thread per core against one thread, and against one thread of the build a page gets without
 * `wasmPaths` (WebGPU's), side by side in one browser (one page each, taking turns), cross-origin
 * isolated as the playground is served; and on each, a training step's `generateGroups` against
 * one group after another.
 */
import { loadavg } from 'node:os';
import type { Page } from 'playwright-core';
import { launchChromium } from '../../test/browser/launch.js';
import { BENCH, BENCH_MODEL_URL, buildModel, MODEL_DIRS } from '../build-model/index.js';
import { callBench, isolatedServerConfig, openReadyPage, READY_TIMEOUT_MS, withBenchServer } from './_chromium.js';
import type { StepSpec, StepTiming } from './_batch-measure.js';
import { ms } from './_measure.js';

const GROUP: StepSpec = { items: 1, groupSize: 8, newTokens: 64, promptTokens: [256] };
const STEP: StepSpec = { items: 4, groupSize: 8, newTokens: 64, promptTokens: [256, 192, 224, 160] };
const ROUNDS = 3;

interface Loaded {
  threads: number;
  threadsNote?: string;
  isolated: boolean;
  cores: number;
}

interface Side {
  label: string;
  loaded: Loaded;
  groupMs: number[];
  tokens: number;
  step: StepTiming[];
}

export async function run(): Promise<string> {
  console.log('  building the bench model (npm run build:model -- --size bench)…');
  await buildModel(BENCH, MODEL_DIRS.bench);
  const loadBefore = loadavg()[0];
  const sides = await withBenchServer(async (base) => {
    const browser = await launchChromium({ webgpu: false });
    try {
      const open = async (label: string, threads: number | undefined, ownFiles: boolean): Promise<{ page: Page; side: Side }> => {
        const page = await openReadyPage(browser, `${base}/scripts/bench/pages/threads.html`, READY_TIMEOUT_MS);
        const loaded = await callBench<Loaded>(page, 'load', BENCH_MODEL_URL, threads, ownFiles);
        return { page, side: { label, loaded, groupMs: [], tokens: 0, step: [] } };
      };
      const both = [
        await open('every core', undefined, true),
        await open('one thread', 1, true),
        await open("one thread, WebGPU's build (no wasmPaths)", undefined, false),
      ];
      for (const { page } of both) await callBench(page, 'group', GROUP); // warm-up
      for (let r = 0; r < ROUNDS; r++) {
        for (const { page, side } of both) {
          const timing = await callBench<{ ms: number; tokens: number }>(page, 'group', GROUP);
          side.groupMs.push(timing.ms);
          side.tokens = timing.tokens;
        }
      }
      for (const { page, side } of both) side.step = await callBench<StepTiming[]>(page, 'step', STEP);
      return both.map((b) => b.side);
    } finally {
      await browser.close();
    }
  }, isolatedServerConfig);
  return report(sides, loadBefore, loadavg()[0]);
}

function report(sides: Side[], loadBefore: number, loadAfter: number): string {
  const [all, one, bundled] = sides;
  const best = (side: Side) => Math.min(...side.groupMs);
  const rate = (side: Side) => (side.tokens / best(side)) * 1000;
  const groupRows = sides.map(
    (s) => `| ${s.label} | ${s.loaded.threads} | ${ms(best(s))} ms | ${s.groupMs.map((x) => ms(x)).join(', ')} | ${s.tokens} | ${rate(s).toFixed(1)} | **${(rate(s) / rate(one)).toFixed(2)}x** |`,
  );
  const stepRows = sides.flatMap((s) => {
    const [batched, sequential] = s.step;
    return [
      `| ${s.label} | \`generateGroups\` | ${ms(batched.ms)} ms | ${batched.tokens} | ${batched.tokensPerSecond.toFixed(1)} | **${(sequential.ms / batched.ms).toFixed(2)}x** |`,
      `| ${s.label} | one \`generateGroup\` after another | ${ms(sequential.ms)} ms | ${sequential.tokens} | ${sequential.tokensPerSecond.toFixed(1)} | 1.00x |`,
    ];
  });
  const batching = sides.map((side) => side.step[1].ms / side.step[0].ms);
  return `## threads: WebAssembly threads in the tab

Bench model (as in the onnx section: 28M parameters, fp32, no end token), Chromium WASM on a cross-origin
isolated page (COOP/COEP, as \`npm start\` serves the playground) with \`wasmPaths\` at onnxruntime-web's own
files, so the policy asks for a thread per core (${all.loaded.cores} here: navigator.hardwareConcurrency).
Three pages in one browser take turns: every core, \`threads: 1\`, and one thread on what a page gets without
\`wasmPaths\` (onnxruntime-web's glue bundled in its module, with its WebGPU build's \`.asyncify\` \`.wasm\`;
it runs ${bundled.loaded.threads} thread there); a warm-up group each,
then ${ROUNDS} rounds of one group (G = 8, 256-token prompt, 64 new tokens); the fastest is compared. The
machine is shared with other work: load ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after.

| Page | Threads | Best group | All rounds | Tokens | Tokens/s | Speed-up |
| --- | ---: | ---: | --- | ---: | ---: | ---: |
${groupRows.join('\n')}

A training step's sampling on each page (4 items x G = 8, prompts of 256 / 192 / 224 / 160 tokens, 64 new
tokens, after a warm-up, once each): \`generateGroups\` as the policy runs it against the items' groups one
after another.

| Page | Sampling | Total | Tokens | Tokens/s | Against one after another |
| ---: | --- | ---: | ---: | ---: | ---: |
${stepRows.join('\n')}

Every core against one thread: ${(rate(all) / rate(one)).toFixed(2)}x for one group, ${(one.step[0].ms / all.step[0].ms).toFixed(2)}x for a step's
sampling (\`generateGroups\` on both). A WebAssembly thread pool meets at a barrier in every operator,
so the gain needs free cores: on a machine whose load is many times its cores one descheduled thread
stalls the other (a run of this suite at load 16 measured 0.49x). Batching against one group after
another: ${batching.map((x) => `${x.toFixed(2)}x`).join(', ')} on these pages. Eight rows of this 28M model already keep
WebAssembly's kernels busy, so reading each weight once for all rows saves little in a tab; it pays
where a pass is bound by reading weights (Node, the "batch" section, and GPUs).
`;
}
