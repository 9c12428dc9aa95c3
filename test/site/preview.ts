/**
 * The playground as `npm start` serves it: the production build in a temporary folder, Vite's
 * preview server on a free port, and a Chromium context that collects console errors.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { build, preview } from 'vite';
import { launchBrowser, type BrowserSession } from '../browser/chromium.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
export const artifacts = join(root, 'test-artifacts', 'site');

export interface Playground {
  baseURL: string;
  session: BrowserSession;
  context: BrowserContext;
  /** Console errors and page errors of every page of the context. */
  errors: string[];
  close(): Promise<void>;
}

export async function startPlayground(contextOptions: BrowserContextOptions = {}): Promise<Playground> {
  await mkdir(artifacts, { recursive: true });
  const outDir = await mkdtemp(join(tmpdir(), 'webgrpo-site-'));
  await build({ configFile: join(root, 'vite.config.ts'), logLevel: 'error', build: { outDir, emptyOutDir: true } });
  const server = await preview({ configFile: join(root, 'vite.config.ts'), logLevel: 'error', build: { outDir }, preview: { host: '127.0.0.1', port: 0, strictPort: false } });
  const session = await launchBrowser();
  const context = await session.browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true, ...contextOptions });
  const errors: string[] = [];
  context.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });
  context.on('weberror', (error) => errors.push(String(error.error())));
  return {
    baseURL: server.resolvedUrls?.local[0] ?? '',
    session,
    context,
    errors,
    async close() {
      await session.close();
      await server.close();
      await rm(outDir, { recursive: true, force: true });
    },
  };
}

/**
 * Picks the random-weight webgrpo-tiny model, which the tests of mechanics run on (the default is
 * webgrpo-skill), and, when asked, the exemplars method with its settings (training-free on alphabetise was the
 * playground's first run before).
 */
export async function chooseTiny(page: Page, { exemplars = false }: { exemplars?: boolean } = {}): Promise<void> {
  await page.getByLabel('Model', { exact: true }).selectOption('tiny');
  if (exemplars) await page.getByRole('radio', { name: 'Training-free: exemplars' }).check();
}
