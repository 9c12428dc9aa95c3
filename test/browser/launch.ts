/**
 * Debian's Chromium, headless, as the tests and the benchmarks drive it; never a downloaded
 * browser. Override the binary with CHROMIUM_PATH. No Vitest here, so scripts can use it too.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const FLAGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** `webgpu` (default true) gives navigator.gpu a SwiftShader (CPU) adapter, so WebGPU code paths run for real. */
export async function launchChromium({ webgpu = true }: { webgpu?: boolean } = {}): Promise<Browser> {
  if (!existsSync(executablePath)) {
    throw new Error(`Chromium not found at ${executablePath}. Install it with \`apt-get install -y chromium\` or set CHROMIUM_PATH.`);
  }
  return chromium.launch({ executablePath, args: webgpu ? [...FLAGS, '--enable-unsafe-webgpu'] : FLAGS, headless: true });
}
