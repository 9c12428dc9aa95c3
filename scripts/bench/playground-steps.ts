/**
 * How long the playground's own runs take, per method, with the settings the page applies: the
 * production build in headless Chromium (WebAssembly), each case in a fresh context. A case picks
 * the model, the method (its settings applied) and the task, presses Start, and watches the
 * header's "step N of M": the time from Start to the first step (loading the model, the base
 * model's held-out answers) and each step's, from one step's start to the next's. After a few
 * steps the run is cancelled: the median step after the first (which also loads the engine) is
 * what a run of these settings costs per step. The page reads the result (site/lib/step-times.data.ts,
 * written here) for the duration it shows before Start; time left during a run comes from the
 * run's own steps. PLAYGROUND_STEPS_CASES=model/method/task,... measures only those cases and keeps
 * the data file's other rows as they were (for a case added later).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { build, preview } from 'vite';
import { launchChromium } from '../../test/browser/launch.js';
import { runPlan } from '../../site/lib/setup.js';
import { choiceOf, suggestedSettings } from '../../site/lib/methods.js';
import { ONNX_MODELS } from '../../site/lib/models.js';
import type { StepTime } from '../../site/lib/step-times.js';
import { STEP_TIMES } from '../../site/lib/step-times.data.js';

/** Steps watched per case; the first is left out of the median. */
const WATCHED = 5;
const CASE_TIMEOUT_MS = 240_000;

const ALL_CASES: ReadonlyArray<{ model: 'sorter' | 'skill' | 'reader'; method: string; task: string }> = [
  { model: 'sorter', method: 'lora', task: 'sort-words' },
  { model: 'sorter', method: 'gradient', task: 'sort-words' },
  { model: 'sorter', method: 'exemplars', task: 'sort-words' },
  { model: 'sorter', method: 'lessons', task: 'sort-words' },
  { model: 'sorter', method: 'router', task: 'sort-words' },
  { model: 'skill', method: 'lora', task: 'copy-format' },
  { model: 'skill', method: 'gradient', task: 'copy-format' },
  { model: 'skill', method: 'lora', task: 'sort-words' },
  { model: 'skill', method: 'exemplars', task: 'copy-format' },
  { model: 'skill', method: 'lessons', task: 'copy-format' },
  { model: 'skill', method: 'router', task: 'copy-format' },
  { model: 'reader', method: 'exemplars', task: 'named-format' },
  { model: 'reader', method: 'lessons', task: 'named-format' },
];

const ONLY = process.env.PLAYGROUND_STEPS_CASES?.split(',');
const CASES = ONLY ? ALL_CASES.filter((c) => ONLY.includes(`${c.model}/${c.method}/${c.task}`)) : ALL_CASES;
const sameCase = (a: StepTime, b: StepTime) => a.model === b.model && a.method === b.method && a.task === b.task;

const LABELS: Record<string, string> = { exemplars: 'Training-free: exemplars', lessons: 'Training-free: lessons', gradient: 'Gradient (adapter)', lora: 'LoRA (every layer)', router: 'Router (which prompt variant)' };

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function measure(page: Page, c: (typeof CASES)[number]): Promise<{ startupMs: number; stepMs: number[]; totalSteps: number }> {
  if (c.model !== ONNX_MODELS[0].id) await page.getByLabel('Model', { exact: true }).selectOption(c.model);
  await page.getByRole('radio', { name: LABELS[c.method] }).check();
  await page.getByLabel('Task', { exact: true }).selectOption(c.task);
  // The page notes the moment the header moves to each step (a looking Node process would miss short steps).
  await page.evaluate(() => {
    const w = window as unknown as { steps: Array<[number, number, number]>; t0: number };
    w.steps = [];
    new MutationObserver(() => {
      const m = /step (\d+) of (\d+)/.exec(document.querySelector('section[aria-labelledby="run-title"] .progress-text')?.textContent ?? '');
      if (m && Number(m[1]) > (w.steps.at(-1)?.[0] ?? 0)) w.steps.push([Number(m[1]), Number(m[2]), performance.now()]);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
    w.t0 = performance.now();
  });
  await page.getByRole('button', { name: 'Start run' }).click();
  const read = () =>
    page.evaluate(() => {
      const w = window as unknown as { steps: Array<[number, number, number]>; t0: number };
      return { steps: [...w.steps], t0: w.t0 };
    });
  const started = Date.now();
  let seen = await read();
  while (seen.steps.length <= WATCHED && Date.now() - started < CASE_TIMEOUT_MS) {
    if (/completed/.test((await page.locator('section[aria-labelledby="run-title"] h2 .chip').textContent({ timeout: 1000 }).catch(() => '')) ?? '')) break;
    await page.waitForTimeout(100);
    seen = await read();
  }
  const cancel = page.getByRole('button', { name: 'Cancel' });
  if (await cancel.count()) await cancel.click();
  const { steps, t0 } = await read();
  // Only consecutive steps time a step: the gap from one step's start to the next's.
  const stepMs = steps.slice(1, WATCHED + 1).flatMap(([n, , t], i) => (n === steps[i][0] + 1 ? [t - steps[i][2]] : []));
  return { startupMs: (steps[0]?.[2] ?? t0) - t0, stepMs, totalSteps: steps[0]?.[1] ?? 0 };
}

export async function run(): Promise<string> {
  const outDir = await mkdtemp(join(tmpdir(), 'webgrpo-steps-bench-'));
  const config = fileURLToPath(new URL('../../vite.config.ts', import.meta.url));
  await build({ configFile: config, logLevel: 'error', build: { outDir, emptyOutDir: true } });
  const server = await preview({ configFile: config, logLevel: 'error', build: { outDir }, preview: { host: '127.0.0.1', port: 0, strictPort: false } });
  const baseURL = server.resolvedUrls?.local[0] as string;
  // No WebGPU adapter: the page's Auto device is WebAssembly, what the table measures.
  const browser = await launchChromium({ webgpu: false });
  const measured: StepTime[] = [];
  const rows: string[] = [];
  try {
    for (const c of CASES) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      await page.goto(baseURL);
      await page.getByRole('heading', { name: 'No run yet' }).waitFor();
      const { startupMs, stepMs, totalSteps } = await measure(page, c);
      await context.close();
      const s = suggestedSettings(choiceOf(c.method), c.model, c.task);
      const shape = { groupSize: s.groupSize!, batchSize: s.batchSize!, maxNewTokens: s.maxNewTokens! };
      // The first step also builds the engine: the median of the others, where there are others.
      const per = stepMs.length > 1 ? median(stepMs.slice(1)) : stepMs.length ? stepMs[0] : null;
      const plan = runPlan({ items: s.items!, epochs: s.epochs!, batchSize: s.batchSize! });
      if (per !== null) measured.push({ model: c.model, method: c.method, task: c.task, ...shape, secondsPerStep: Math.round(per / 100) / 10, startupSeconds: Math.round(startupMs / 100) / 10 });
      rows.push(
        `| ${c.model} | ${c.method} | ${c.task} | ${s.items} x ${s.epochs} epoch(s), ${shape.batchSize} per step, G=${shape.groupSize}, ${shape.maxNewTokens} tokens | ${plan.steps} (${totalSteps}) | ${(startupMs / 1000).toFixed(1)} | ${stepMs.map((ms) => (ms / 1000).toFixed(1)).join(', ') || '—'} | ${per === null ? '—' : (per / 1000).toFixed(1)} | ${per === null ? '—' : ((startupMs + plan.steps * per) / 1000).toFixed(0)} |`,
      );
      console.log(rows.at(-1));
    }
  } finally {
    await browser.close();
    await server.close();
    await rm(outDir, { recursive: true, force: true });
  }
  await writeFile(
    new URL('../../site/lib/step-times.data.ts', import.meta.url),
    `/** Written by \`npm run bench -- playground-steps\` (BENCHMARKS "playground-steps"): not to be edited by hand; step-times.ts holds them to their type. */\nexport const STEP_TIMES = ${JSON.stringify(ONLY ? [...measured, ...STEP_TIMES.filter((t) => !measured.some((m) => sameCase(m, t)))] : measured, null, 2)};\n`,
  );
  return [
    '## playground-steps: how long the page\'s own runs take, per method, with the settings it applies',
    '',
    `The production build (\`vite build\`, \`vite preview\`) in headless Chromium on WebAssembly, a fresh context per case: the model and method picked (the page applies the method's settings), the task, then Start. Startup: Start to the header's first step (the model loading, the base model's held-out answers). Steps: one step's start to the next's, for the first ${WATCHED} steps; the run is then cancelled. Per step: the median of those after the first (the first also builds the training engine). Estimate: startup + the run's steps x per step, before the held-out evaluation after each epoch. The page reads per step and startup (site/lib/step-times.data.ts, written by this suite) for the duration it shows before Start, for these settings only.`,
    '',
    '| model | method | task | settings | steps (header) | startup s | steps s | per step s | estimate s |',
    '|---|---|---|---|---:|---:|---|---:|---:|',
    ...rows,
  ].join('\n');
}
