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
});
