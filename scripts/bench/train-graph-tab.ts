/**
 * The graph engine's LoRA step in a Chromium tab on onnxruntime-web's WASM kernels, against the
 * policy's scoring pass of the same tokens in the same tab (both one thread), on the bundled model
 * and the bench model. Wall time (a tab has no CPU clock), best of 3 after a warm-up: on a shared
 * machine the best run is the one the neighbours disturbed least.
 */
import { realpath } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../../test/browser/launch.js';
import { browserServerConfig } from '../../test/browser/server-config.js';
import { BENCH, BENCH_MODEL_URL, buildModel, MODEL_DIRS } from '../build-model/index.js';
import { callBench, openReadyPage, READY_TIMEOUT_MS, withBenchServer } from './_chromium.js';
import { ms } from './_measure.js';

const GROUP = 4;
const NEW_TOKENS = 32;
const RANK = 8;
const PROMPT = 'Answer with digits only: what is 7 x 6?';

interface TabStep {
  scoreMs: number;
  forwardMs: number;
  stepMs: number;
  promptTokens: number;
  tokens: number;
}

export async function run(): Promise<string> {
  await buildModel(BENCH, MODEL_DIRS.bench);
  // Where node_modules is a link out of the checkout (a worktree sharing one), Vite must be allowed to serve its target.
  const modules = await realpath(fileURLToPath(new URL('../../node_modules', import.meta.url)));
  const config = { ...browserServerConfig, server: { ...browserServerConfig.server, fs: { allow: [...(browserServerConfig.server?.fs?.allow ?? []), modules] } } };
  const results = await withBenchServer(async (base) => {
    const browser = await launchChromium();
    try {
      const page = await openReadyPage(browser, `${base}/scripts/bench/pages/train-graph.html`, READY_TIMEOUT_MS);
      return {
        tiny: await callBench<TabStep>(page, 'step', '/models/webgrpo-tiny', PROMPT, GROUP, NEW_TOKENS, RANK, 3),
        bench: await callBench<TabStep>(page, 'step', BENCH_MODEL_URL, PROMPT, GROUP, NEW_TOKENS, RANK, 3),
      };
    } finally {
      await browser.close();
    }
  }, config);
  const x = (a: number, b: number) => (a / b).toFixed(2);
  return [
    "## LoRA train step on onnxruntime's kernels, in a Chromium tab (WASM)",
    '',
    `One group of ${GROUP} completions x ${NEW_TOKENS} tokens of the same prompt, LoRA rank ${RANK} on all seven projections of every layer, in one tab, onnxruntime-web WebAssembly with one thread on both sides. ` +
      'Wall time (no CPU clock in a tab), best of 3 runs after a warm-up, on a machine shared with other work.',
    '',
    '| model | completion tokens | scoring pass, ms | graph forward, ms | graph train step, ms | step x scoring |',
    '|---|---:|---:|---:|---:|---:|',
    ...(['bench', 'tiny'] as const).map((k) => {
      const r = results[k];
      return `| ${k === 'bench' ? 'bench (28M)' : 'bundled (0.8M)'} | ${r.tokens} | ${ms(r.scoreMs)} | ${ms(r.forwardMs)} | ${ms(r.stepMs)} | ${x(r.stepMs, r.scoreMs)} |`;
    }),
    '',
    "The bundled model's passes are short, and a loaded machine moves them by as much as the work itself: read its row as noise; the bench model's is the measurement. Node's CPU-time ratios are in the section above.",
  ].join('\n');
}
