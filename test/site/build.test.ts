/**
 * The playground's production build (`npm run build:site`, what `npm start` serves): it warns about
 * nothing, and emits each of onnxruntime-web's WebAssembly builds once, in ort/ where the page's
 * `wasmPaths` points, with no second copy in assets/ that nothing fetches.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, createLogger, type Logger } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('the site build', { timeout: 120_000 }, () => {
  let outDir = '';
  const warnings: string[] = [];
  let files: string[] = [];

  beforeAll(async () => {
    outDir = await mkdtemp(join(tmpdir(), 'webgrpo-site-build-'));
    const logger = createLogger('warn');
    const customLogger: Logger = { ...logger, warn: (message) => void warnings.push(message), warnOnce: (message) => void warnings.push(message) };
    await build({ configFile: join(root, 'vite.config.ts'), logLevel: 'warn', customLogger, build: { outDir, emptyOutDir: true } });
    files = (await readdir(outDir, { recursive: true })).map((f) => f.replaceAll('\\', '/'));
  });
  afterAll(async () => {
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  it('prints no warning (an ineffective dynamic import among them)', () => {
    expect(warnings).toEqual([]);
  });

  it('emits each onnxruntime WebAssembly build once, in ort/', () => {
    const wasm = files.filter((f) => f.endsWith('.wasm')).sort();
    expect(wasm).toEqual(['ort/ort-wasm-simd-threaded.asyncify.wasm', 'ort/ort-wasm-simd-threaded.wasm']);
  });
});
