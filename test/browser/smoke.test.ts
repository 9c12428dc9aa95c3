import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type BrowserSession } from './chromium.js';

interface SmokeResult {
  errorCode: string;
  webgpu: boolean;
  adapter: string | null;
}

describe('headless Chromium', () => {
  let session: BrowserSession;
  beforeAll(async () => {
    session = await launchBrowser();
  });
  afterAll(() => session?.close());

  it('runs the library from source and exposes a WebGPU adapter', async () => {
    const page = await session.open('/test/browser/pages/smoke.html');
    await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    const result = await page.evaluate(() =>
      (window as unknown as { smoke: () => Promise<SmokeResult> }).smoke(),
    );
    expect(result.errorCode).toBe('InvalidInput');
    expect(result.webgpu).toBe(true);
    expect(session.errors).toEqual([]);
  });

  // Other suites write under the repository while pages run (test/docs writes a tsconfig.json in
  // build/); a watching dev server answered that by reloading every open page mid-evaluate.
  it('keeps an open page when a tsconfig.json appears under the served root', async () => {
    const page = await session.open('/test/browser/pages/smoke.html');
    await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    await page.evaluate(() => void ((window as unknown as { kept?: boolean }).kept = true));
    const root = fileURLToPath(new URL('../..', import.meta.url));
    await mkdir(join(root, 'build'), { recursive: true });
    const dir = await mkdtemp(join(root, 'build', 'reload-probe-'));
    try {
      const navigated = page.waitForEvent('framenavigated', { timeout: 3_000 }).then(
        () => true,
        () => false,
      );
      await writeFile(join(dir, 'tsconfig.json'), '{}');
      expect(await navigated, 'the page reloaded').toBe(false);
      expect(await page.evaluate(() => (window as unknown as { kept?: boolean }).kept)).toBe(true);
      expect(session.errors).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
