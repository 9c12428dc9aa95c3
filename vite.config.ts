import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

// The playground. `public/` holds static assets, among them the bundled tiny model.
export default defineConfig({
  root: 'site',
  publicDir: '../public',
  base: './',
  // Svelte's defaults suit the site; `configFile: false` skips looking for a svelte.config.js.
  plugins: [svelte({ configFile: false })],
  // The model worker imports transformers.js lazily; ES workers keep its code-split chunks.
  // The page loads the LoRA engine only when a LoRA run opens (lib/methods/lora/method.ts); the
  // worker imports webgrpo/grad whole, where that split has nothing to move: no news.
  worker: { format: 'es', rollupOptions: { checks: { ineffectiveDynamicImport: false } } },
  build: {
    outDir: '../build/site',
    emptyOutDir: true,
    target: 'es2022',
    rollupOptions: {
      // The worker's transformers.js transform is slow by design; a timing report on every build is noise.
      checks: { pluginTimings: false },
      // The ONNX backend imports node: modules only on its Node path; the browser build never runs it.
      onLog(level, log, handler) {
        if (/"node:[\w/]+" has been externalized for browser compatibility/.test(log.message)) return;
        handler(level, log);
      },
    },
  },
  preview: { host: '127.0.0.1', port: 5173 },
  server: { host: '127.0.0.1' },
});
