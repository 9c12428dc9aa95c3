import type { Browser, Page } from 'playwright-core';
import { inject } from 'vitest';
import { launchChromium } from './launch.js';

export interface BrowserSession {
  browser: Browser;
  /** Opens a path on the test server; console errors and page errors are collected in `errors`. */
  open(path: string): Promise<Page>;
  errors: string[];
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<BrowserSession> {
  const browser = await launchChromium();
  const baseURL = inject('browserBaseURL');
  const errors: string[] = [];
  return {
    browser,
    errors,
    async open(path: string) {
      const page = await browser.newPage();
      page.on('console', (msg) => {
        if (msg.type() === 'error') errors.push(msg.text());
      });
      page.on('pageerror', (err) => errors.push(String(err)));
      await page.goto(new URL(path, baseURL).href);
      return page;
    },
    close: () => browser.close(),
  };
}
