/**
 * The playground's weight: the production build served by `vite preview` and opened in Debian's
 * Chromium, recording every file the page fetches. "First screen" is what a visitor downloads
 * before choosing a model (the page, the Svelte UI, the charts, the core library, idb); "model"
 * is what choosing the bundled model adds (the worker, transformers.js, the onnxruntime-web WASM,
 * the model files). The obvious alternative, importing the model runtime up front, would put the
 * second part in the first. Sizes are gzip (level 6, what servers typically send).
 *
 * Then responsiveness: the same model loaded and sampled on the page itself (loadOnnxPolicy) and
 * in a Web Worker (createWorkerPolicy, as the playground does), counting the main-thread tasks over
 * 50 ms (Long Tasks API) that would freeze the page.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { build, preview } from 'vite';
import { launchChromium } from '../../test/browser/launch.js';
import { openReadyPage, withBenchServer } from './_chromium.js';
import { BENCH_MODEL_URL, buildModel, MODEL_DIRS, PRESETS } from '../build-model/index.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

interface Asset {
  path: string;
  raw: number;
  gzip: number;
}

async function sizes(outDir: string, paths: Iterable<string>): Promise<Asset[]> {
  const assets: Asset[] = [];
  for (const path of new Set(paths)) {
    const file = join(outDir, path === '/' ? 'index.html' : decodeURIComponent(path));
    const bytes = await readFile(file).catch(() => null);
    if (bytes) assets.push({ path, raw: bytes.length, gzip: gzipSync(bytes).length });
  }
  return assets.sort((a, b) => b.gzip - a.gzip);
}

const kb = (n: number) => `${(n / 1024).toFixed(1)} kB`;
const total = (assets: Asset[], key: 'raw' | 'gzip') => assets.reduce((n, a) => n + a[key], 0);

function table(title: string, assets: Asset[]): string {
  const rows = assets.map((a) => `| \`${a.path.replace(/-[\w-]{8}(\.\w+)$/, '-*$1')}\` | ${kb(a.raw)} | ${kb(a.gzip)} |`);
  return [`| ${title} | raw | gzip |`, '| --- | ---: | ---: |', ...rows, `| **total** | **${kb(total(assets, 'raw'))}** | **${kb(total(assets, 'gzip'))}** |`].join('\n');
}

async function fetchedWhile(page: Page, action: () => Promise<unknown>): Promise<string[]> {
  const paths: string[] = [];
  const onWorker = (url: string) => paths.push(new URL(url).pathname);
  const listener = (request: { url(): string }) => onWorker(request.url());
  page.context().on('requestfinished', listener);
  await action();
  page.context().off('requestfinished', listener);
  return paths;
}

interface Blocking {
  count: number;
  longestMs: number;
  blockedMs: number;
  wallMs: number;
}
type Phases = { load: Blocking; generate: Blocking };

/** The bundled model, and the 28M-parameter bench model (made on demand, gitignored), closer to a real one. */
const MODELS = [
  { label: 'webgrpo-tiny (0.8M)', path: '/models/webgrpo-tiny/', groups: 5, tokens: 64 },
  { label: 'webgrpo-bench (28M)', path: `${BENCH_MODEL_URL}/`, groups: 2, tokens: 32 },
];
type Measured = Array<{ label: string; groups: number; tokens: number; page: Phases; worker: Phases }>;

async function responsiveness(launch: () => Promise<Browser>): Promise<Measured> {
  if (!existsSync(join(MODEL_DIRS.bench, 'onnx/model.onnx'))) await buildModel(PRESETS.bench, MODEL_DIRS.bench);
  return withBenchServer(async (base) => {
    const url = `${base}/scripts/bench/pages/responsiveness.html`;
    const browser = await launch();
    try {
      const measured: Measured = [];
      for (const model of MODELS) {
        const result = { label: model.label, groups: model.groups, tokens: model.tokens } as Measured[number];
        for (const where of ['page', 'worker'] as const) {
          // A fresh page each: the runtime must not be warm from the other variant.
          const page = await openReadyPage(browser, url);
          result[where] = await page.evaluate(
            ([w, m, g, t]) => (window as unknown as { bench: Record<string, (model: string, groups: number, tokens: number) => Promise<Phases>> }).bench[w](m, g, t),
            [where, model.path, model.groups, model.tokens] as const,
          );
          await page.close();
        }
        measured.push(result);
      }
      return measured;
    } finally {
      await browser.close();
    }
  });
}

function blockingTable(measured: Measured): string {
  const row = (label: string, b: Blocking) => `| ${label} | ${b.wallMs.toFixed(0)} ms | ${b.count} | ${b.longestMs.toFixed(0)} ms | ${b.blockedMs.toFixed(0)} ms |`;
  const rows = measured.flatMap((m) => [
    row(`${m.label}: load, on the page`, m.page.load),
    row(`${m.label}: load, in a worker (playground)`, m.worker.load),
    row(`${m.label}: ${m.groups} groups of 4 × ${m.tokens} tokens, on the page`, m.page.generate),
    row(`${m.label}: ${m.groups} groups of 4 × ${m.tokens} tokens, in a worker (playground)`, m.worker.generate),
  ]);
  return ['| WASM | wall time | main-thread tasks > 50 ms | longest | main thread blocked |', '| --- | ---: | ---: | ---: | ---: |', ...rows].join('\n');
}

function worst(measured: Measured, where: 'page' | 'worker'): string {
  return Math.max(0, ...measured.flatMap((m) => [m[where].load.longestMs, m[where].generate.longestMs])).toFixed(0);
}

export async function run(): Promise<string> {
  const outDir = await mkdtemp(join(tmpdir(), 'webgrpo-site-bench-'));
  const config = join(root, 'vite.config.ts');
  try {
    await build({ configFile: config, logLevel: 'error', build: { outDir, emptyOutDir: true } });
    const server = await preview({ configFile: config, logLevel: 'error', build: { outDir }, preview: { host: '127.0.0.1', port: 0, strictPort: false } });
    const url = server.resolvedUrls?.local[0] as string;
    // No WebGPU adapter: the page's 'auto' device is WASM, the runtime the table measures.
    const launch = () => launchChromium({ webgpu: false });
    const browser = await launch();
    try {
      const page = await browser.newPage();
      const first = await fetchedWhile(page, async () => {
        await page.goto(url, { waitUntil: 'networkidle' });
        await page.getByRole('heading', { name: 'No run yet' }).waitFor();
      });
      const model = await fetchedWhile(page, async () => {
        await page.getByRole('button', { name: 'Load model' }).click();
        await page.locator('#model-title ~ div .chip', { hasText: 'Ready' }).waitFor({ timeout: 120_000 });
      });
      const blocking = await responsiveness(launch);
      const firstAssets = await sizes(outDir, first);
      const modelAssets = await sizes(outDir, model.filter((p) => !first.includes(p)));
      const firstGzip = total(firstAssets, 'gzip');
      const eager = firstGzip + total(modelAssets.filter((a) => !a.path.startsWith('/models/')), 'gzip');
      return [
        '## Playground bundle (site)',
        '',
        `The first screen downloads **${kb(firstGzip)} gzip**. onnxruntime-web and transformers.js load only when a model is chosen,`,
        `in the model's Web Worker; importing them up front (the obvious alternative) would make the first screen ${kb(eager)} gzip,`,
        `${(eager / firstGzip).toFixed(0)}× heavier, before the visitor has picked anything.`,
        '',
        table('First screen (production build)', firstAssets),
        '',
        table('Added when the bundled model is chosen', modelAssets),
        '',
        '### The page stays responsive',
        '',
        'The same model loaded and sampled on the page (`loadOnnxPolicy` in the window) and in a Web Worker',
        '(`createWorkerPolicy`, as the playground runs it), counting main-thread tasks over 50 ms (the Long Tasks',
        'API): while one runs the page cannot paint or answer a click. One run each, on a shared machine, so the',
        'wall times are noisy; the blocking columns are the point.',
        '',
        blockingTable(blocking),
        '',
        `Longest main-thread task over all of it: ${worst(blocking, 'page')} ms with the model on the page, ${worst(blocking, 'worker')} ms`,
        'with the model in the worker. Creating the session blocks the page; sampling these small models yields between',
        'forward passes either way, but a pass grows with the model, and with it every stall a page-side model causes.',
      ].join('\n');
    } finally {
      await browser.close();
      await server.close();
    }
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
}
