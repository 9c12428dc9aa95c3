/**
 * The playground's weight: the production build served by `vite preview` and opened in Debian's
 * Chromium, recording every file the page fetches. "First screen" is what a visitor downloads
 * before choosing a model (the page, the Svelte UI, the charts, the core library, idb); "model"
 * is what choosing the bundled model adds (the worker, transformers.js, the onnxruntime-web WASM,
 * the model files). The obvious alternative, importing the model runtime up front, would put the
 * second part in the first. Sizes are gzip (level 6, what servers typically send).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium, type Page } from 'playwright-core';
import { build, preview } from 'vite';

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

export async function run(): Promise<string> {
  const outDir = await mkdtemp(join(tmpdir(), 'webgrpo-site-bench-'));
  const config = join(root, 'vite.config.ts');
  try {
    await build({ configFile: config, logLevel: 'error', build: { outDir, emptyOutDir: true } });
    const server = await preview({ configFile: config, logLevel: 'error', build: { outDir }, preview: { host: '127.0.0.1', port: 0, strictPort: false } });
    const url = server.resolvedUrls?.local[0] as string;
    const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--headless=new', '--no-sandbox', '--disable-gpu'] });
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
      ].join('\n');
    } finally {
      await browser.close();
      await server.close();
    }
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
}
