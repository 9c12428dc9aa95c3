import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { inject } from 'vitest';

/** Debian's Chromium; never a downloaded browser. Override with CHROMIUM_PATH. */
const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const flags = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  // Gives navigator.gpu a SwiftShader (CPU) adapter, so WebGPU code paths run for real.
  '--enable-unsafe-webgpu',
];

export interface BrowserSession {
  browser: Browser;
  /** Opens a path on the test server; console errors and page errors are collected in `errors`. */
  open(path: string): Promise<Page>;
  errors: string[];
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<BrowserSession> {
  if (!existsSync(executablePath)) {
    throw new Error(
      `Chromium not found at ${executablePath}. Install it with \`apt-get install -y chromium\` ` +
        'or set CHROMIUM_PATH.',
    );
  }
  const browser = await chromium.launch({ executablePath, args: flags, headless: true });
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
