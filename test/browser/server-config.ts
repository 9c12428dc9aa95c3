import { fileURLToPath } from 'node:url';
import type { InlineConfig } from 'vite';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The Vite dev server that serves browser test pages (test/browser/pages/*.html) and the repo's
 * sources to real Chromium, with `public/` (the bundled model) at the site root.
 */
export const browserServerConfig: InlineConfig = {
  root,
  configFile: false,
  publicDir: 'public',
  logLevel: 'warn',
  server: { host: '127.0.0.1', port: 0, strictPort: false, fs: { allow: [root] } },
  // Test pages load dependencies on demand; pre-bundling discovered late would reload the page.
  // onnx-proto is CommonJS (the hidden-state rewrite of webgrpo/onnx), so it is converted up front.
  optimizeDeps: { noDiscovery: true, include: ['onnx-proto'] },
};
