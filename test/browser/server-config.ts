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
  // No file watching and no HMR: the suite writes files under the root while pages run (the docs
  // test writes build/doc-examples-*/tsconfig.json), and Vite answers a new tsconfig.json, a changed
  // .html or a changed module with a full reload of every open page, which destroys the execution
  // context a test is evaluating in. Test pages are loaded once per suite, so nothing needs it.
  server: { host: '127.0.0.1', port: 0, strictPort: false, fs: { allow: [root] }, watch: null, hmr: false },
  // Test pages load dependencies on demand; pre-bundling discovered late would reload the page.
  // onnx-proto is CommonJS (the hidden-state rewrite of webgrpo/onnx), so it is converted up front.
  optimizeDeps: { noDiscovery: true, include: ['onnx-proto'] },
};
