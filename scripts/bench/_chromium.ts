/**
 * Driving a benchmark page in headless Chromium: the Vite dev server that serves the pages
 * (scripts/bench/pages/*.html) and the repo's sources, a page opened and waited on until it sets
 * `window.ready`, and calls into the `window.bench` it exposes.
 */
import type { Browser, Page } from 'playwright-core';
import { createServer, type InlineConfig } from 'vite';
import { launchChromium } from '../../test/browser/launch.js';
import { browserServerConfig } from '../../test/browser/server-config.js';

/** How long a page may take to import its modules and set `window.ready`. */
export const READY_TIMEOUT_MS = 120_000;

/**
 * The dev server's configuration with the page cross-origin isolated (COOP/COEP), as the
 * playground serves it, so onnxruntime-web may run WebAssembly threads.
 */
export const isolatedServerConfig: InlineConfig = {
  ...browserServerConfig,
  server: { ...browserServerConfig.server, headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } },
};

/** Runs `fn` with the base URL (`http://127.0.0.1:<port>`) of a dev server started for it, closed afterwards. */
export async function withBenchServer<T>(fn: (base: string) => Promise<T>, config: InlineConfig = browserServerConfig): Promise<T> {
  const server = await createServer(config);
  await server.listen();
  try {
    const address = server.httpServer?.address();
    return await fn(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`);
  } finally {
    await server.close();
  }
}

/** A new page of `browser` at `url`, once its modules have loaded and it has set `window.ready`. */
export async function openReadyPage(browser: Browser, url: string, readyTimeoutMs?: number): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(url);
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true, null, readyTimeoutMs === undefined ? {} : { timeout: readyTimeoutMs });
  return page;
}

/**
 * Runs `fn` on the page at `pagePath` (e.g. `/scripts/bench/pages/lora.html`) in a fresh Chromium
 * (WebGPU on SwiftShader) against a fresh dev server; both closed afterwards.
 */
export async function inChromium<T>(pagePath: string, fn: (page: Page) => Promise<T>): Promise<T> {
  return withBenchServer(async (base) => {
    const browser = await launchChromium();
    try {
      return await fn(await openReadyPage(browser, `${base}${pagePath}`, READY_TIMEOUT_MS));
    } finally {
      await browser.close();
    }
  });
}

/** Calls `window.bench[name](...args)` on the page and returns its (JSON-cloned) result. */
export async function callBench<T>(page: Page, name: string, ...args: unknown[]): Promise<T> {
  return (await page.evaluate(
    ([n, a]) => (window as unknown as { bench: Record<string, (...x: unknown[]) => Promise<unknown>> }).bench[n as string](...(a as unknown[])),
    [name, args] as const,
  )) as T;
}
