import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterEach, expect, inject } from 'vitest';
import { launchChromium } from './launch.js';

export interface BrowserSession {
  browser: Browser;
  /**
   * Opens a path on the test server, in `context` (tabs sharing one profile) or a fresh one;
   * console errors, page errors, a crash and any later reload are collected in `errors`.
   */
  open(path: string, context?: BrowserContext): Promise<Page>;
  errors: string[];
  close(): Promise<void>;
}

/**
 * After every test of the file, the console errors logged during that test must be none (those
 * `allowed` matches aside); they are then cleared, so each test answers for its own. `session` is
 * read when each test ends (it is opened in a beforeAll).
 */
export function expectNoConsoleErrors(session: () => { errors: string[] } | undefined, allowed?: RegExp): void {
  afterEach(() => {
    const errors = session()?.errors.splice(0) ?? [];
    expect(errors.filter((e) => !allowed?.test(e)), 'console errors during this test').toEqual([]);
  });
}

export async function launchBrowser(): Promise<BrowserSession> {
  const browser = await launchChromium();
  const baseURL = inject('browserBaseURL');
  const errors: string[] = [];
  return {
    browser,
    errors,
    async open(path: string, context?: BrowserContext) {
      const page = await (context ?? browser).newPage();
      page.on('console', (msg) => {
        if (msg.type() === 'error') errors.push(msg.text());
      });
      page.on('pageerror', (err) => errors.push(String(err)));
      // Both would otherwise surface only as playwright's "Execution context was destroyed" or
      // "Target crashed" in whichever evaluate was running; no test page navigates by itself.
      page.on('crash', () => errors.push(`${path} crashed (the renderer died, e.g. out of memory)`));
      await page.goto(new URL(path, baseURL).href);
      page.on('framenavigated', (frame) => {
        if (frame === page.mainFrame()) errors.push(`${path} was reloaded or navigated to ${frame.url()} after it opened`);
      });
      return page;
    },
    close: () => browser.close(),
  };
}
