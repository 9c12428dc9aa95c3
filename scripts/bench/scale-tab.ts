/**
 * The scale bench's LoRA step in a Chromium tab on WebAssembly: a random-weight model of
 * SmolLM2-135M-Instruct's exact shape (fp32, built on demand), loaded, sampled, scored and
 * trained through the public API in one page with the sampler still loaded, cross-origin isolated
 * so onnxruntime-web may use both cores. The renderer's resident memory is read from outside the
 * browser every 200 ms (its peak over the call). Wall time: a tab has no CPU clock.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { launchChromium } from '../../test/browser/launch.js';
import { buildModel } from '../build-model/index.js';
import { callBench, isolatedServerConfig, openReadyPage, READY_TIMEOUT_MS, withBenchServer } from './_chromium.js';
import { hubShapeSpec } from './_hub-shapes.js';
import { ms } from './_measure.js';

const exec = promisify(execFile);
const PROMPT = 'Answer with digits only: what is 7 x 6?';
const GROUPS: Array<[number, number]> = [
  [4, 64],
  [8, 128],
];

interface TabRun {
  phase: string;
  error?: string;
  loadMs?: number;
  sampleMs?: number;
  scoreMs?: number;
  tokens?: number;
  stepsMs?: number[];
}

/** The largest resident set of a Chromium renderer process now, in bytes. */
async function rendererRss(): Promise<number> {
  const { stdout } = await exec('ps', ['-eo', 'rss=,args=']);
  return Math.max(0, ...stdout.split('\n').filter((l) => l.includes('--type=renderer')).map((l) => Number(l.trim().split(/\s+/)[0]) * 1024));
}

export async function run(): Promise<string> {
  const { spec, dir } = await hubShapeSpec('smollm2-135m');
  if (!existsSync(join(dir, 'onnx/model.onnx'))) await buildModel(spec, dir);
  const modules = await realpath(fileURLToPath(new URL('../../node_modules', import.meta.url)));
  const config = { ...isolatedServerConfig, server: { ...isolatedServerConfig.server, fs: { allow: [...(isolatedServerConfig.server?.fs?.allow ?? []), modules] } } };
  const rows: Array<{ G: number; T: number; run: TabRun; peak: number }> = [];
  await withBenchServer(async (base) => {
    for (const [G, T] of GROUPS) {
      console.log(`  tab: ${G} x ${T}…`);
      const browser = await launchChromium();
      let peak = 0;
      const poll = setInterval(() => void rendererRss().then((rss) => (peak = Math.max(peak, rss)), () => undefined), 200);
      try {
        const page = await openReadyPage(browser, `${base}/scripts/bench/pages/scale.html`, READY_TIMEOUT_MS);
        page.setDefaultTimeout(0);
        const result = await callBench<TabRun>(page, 'step', `/${dir}`, PROMPT, G, T, 2, 2);
        rows.push({ G, T, run: result, peak });
      } catch (error) {
        rows.push({ G, T, run: { phase: 'page', error: String(error).slice(0, 300) }, peak });
      } finally {
        clearInterval(poll);
        await browser.close();
      }
    }
  }, config);
  const gb = (bytes: number) => (bytes / 2 ** 30).toFixed(2);
  return [
    '## scale-tab: a hub-sized LoRA step in a Chromium tab (WASM)',
    '',
    "SmolLM2-135M-Instruct's exact shape (random weights, fp32, 538 MB), in headless Chromium on onnxruntime-web's WebAssembly with 2 threads (the page cross-origin isolated), the sampler loaded throughout: " +
      '`loadOnnxPolicy`, one sampled group, a scoring pass, then two LoRA steps (rank 8, every projection) through `GrpoTrainer` over `loraEngine`, default engine settings. Wall time on a shared machine; peak renderer RSS polled every 200 ms from outside.',
    '',
    '| G x T | result | load s | sampling tok/s | scoring ms | first step ms | second step ms | step x scoring | peak renderer RSS GB |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(({ G, T, run: r, peak }) => {
      const steps = r.stepsMs ?? [];
      const done = r.phase === 'done';
      return `| ${G} x ${T} | ${done ? 'trains' : `failed at ${r.phase}: ${(r.error ?? '').replace(/\|/g, '/')}`} | ${r.loadMs ? (r.loadMs / 1000).toFixed(1) : '-'} | ${r.sampleMs && r.tokens ? ((r.tokens / r.sampleMs) * 1000).toFixed(0) : '-'} | ${r.scoreMs ? ms(r.scoreMs) : '-'} | ${steps[0] ? ms(steps[0]) : '-'} | ${steps[1] ? ms(steps[1]) : '-'} | ${steps[1] && r.scoreMs ? (steps[1] / r.scoreMs).toFixed(2) : '-'} | ${gb(peak)} |`;
    }),
    '',
    'Before this engine (the whole-decoder graphs), recorded at the same shape on this machine class before they were replaced (not re-run): 4 x 32 trained (25.7 s first step, 7.0 s the next, 5.8 GB), 8 x 80 trained (38.7 s, 19.8 s, 7.0 GB), 8 x 96 and 8 x 128 failed with `std::bad_alloc` in the backward or the training forward.',
  ].join('\n');
}
