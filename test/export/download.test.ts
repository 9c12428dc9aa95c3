/** The browser side of export in real headless Chromium: a Blob and a real download. */
import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type BrowserSession } from '../browser/chromium.js';
import { checkTrlPromptCompletion } from './trl-format.js';

let session: BrowserSession;
let page: Page;

beforeAll(async () => {
  session = await launchBrowser();
  page = await session.open('/test/browser/pages/export-download.html');
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
});
afterAll(() => session?.close());

const run = <T>(name: string) => page.evaluate((fn) => (window as unknown as Record<string, () => T>)[fn](), name);

describe('JSONL in the browser', () => {
  it('makes a JSONL Blob and downloads it as a file with the same lines', async () => {
    const expected = await run<string>('expected');
    checkTrlPromptCompletion(expected);
    expect(await run<{ type: string; text: string }>('blob')).toEqual({ type: 'application/jsonl', text: expected });

    const [download] = await Promise.all([page.waitForEvent('download'), run<void>('download')]);
    expect(download.suggestedFilename()).toBe('rollouts.jsonl');
    expect(await readFile((await download.path())!, 'utf8')).toBe(expected);
    expect(session.errors).toEqual([]);
  });
});
