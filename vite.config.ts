import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { defaultClientConditions, defineConfig, type Plugin } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

/**
 * Pages that are cross-origin isolated may share memory with workers, which onnxruntime-web's
 * WebAssembly threads need. `require-corp` still lets the hub's model files in: transformers.js
 * fetches them in CORS mode, and huggingface.co answers with `Access-Control-Allow-Origin: *`
 * (a CORS response needs no Cross-Origin-Resource-Policy header).
 */
const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

/**
 * onnxruntime-web's own files served at `ort/` (the policy's `wasmPaths`): the WebAssembly build for
 * models on WASM and WebGPU's (`.asyncify`) for WebGPU, each glue code a file of its own, so its
 * thread workers start from onnxruntime's code rather than a chunk of the app.
 */
function onnxruntimeFiles(): Plugin {
  const dist = dirname(createRequire(import.meta.url).resolve('onnxruntime-web/ort-wasm-simd-threaded.wasm'));
  const files = ['ort-wasm-simd-threaded', 'ort-wasm-simd-threaded.asyncify'].flatMap((name) => [`${name}.mjs`, `${name}.wasm`]);
  const types: Record<string, string> = { mjs: 'text/javascript', wasm: 'application/wasm' };
  return {
    name: 'webgrpo-onnxruntime-files',
    configureServer(server) {
      server.middlewares.use((request, response, next) => {
        const file = /\/ort\/([\w.-]+)$/.exec(request.url?.split('?')[0] ?? '')?.[1];
        if (!file || !files.includes(file)) return next();
        response.setHeader('Content-Type', types[file.slice(file.lastIndexOf('.') + 1)]);
        for (const [name, value] of Object.entries(isolation)) response.setHeader(name, value);
        response.end(readFileSync(join(dist, file)));
      });
    },
    generateBundle() {
      for (const file of files) this.emitFile({ type: 'asset', fileName: `ort/${file}`, source: readFileSync(join(dist, file)) });
    },
  };
}

/**
 * The bundled models' files leave the preview server uncompressed, with their Content-Length.
 * Vite's preview gzips JSON (config.json, tokenizer.json, tokenizer_config.json) and so sends
 * it chunked with no length: transformers.js then cannot size its buffer or its progress, and
 * warns "Unable to determine content-length" once per such file at every model load.
 */
function modelFilesWithLength(): Plugin {
  return {
    name: 'webgrpo-model-files-with-length',
    configurePreviewServer(server) {
      server.middlewares.use((request, _response, next) => {
        if (/\/models\//.test(request.url ?? '')) delete request.headers['accept-encoding'];
        next();
      });
    },
  };
}

// The playground. `public/` holds static assets, among them the bundled models.
export default defineConfig({
  root: 'site',
  publicDir: '../public',
  base: './',
  // Svelte's defaults suit the site; `configFile: false` skips looking for a svelte.config.js.
  plugins: [svelte({ configFile: false }), onnxruntimeFiles(), modelFilesWithLength()],
  // onnxruntime-web's build that loads its glue and .wasm from `wasmPaths` (the page always passes
  // ort/, served above), not the bundle whose `new URL('….asyncify.wasm', import.meta.url)` made
  // Vite emit a second 26.9 MB copy of the WebGPU build into assets/ that nothing fetched.
  resolve: { conditions: ['onnxruntime-web-use-extern-wasm', ...defaultClientConditions] },
  // The model worker imports transformers.js lazily; ES workers keep its code-split chunks.
  // The page loads the LoRA engine only when a LoRA run opens (lib/methods/lora/method.ts); the
  // worker imports webgrpo/grad whole, where that split has nothing to move: no news.
  worker: { format: 'es', rollupOptions: { checks: { ineffectiveDynamicImport: false } } },
  build: {
    outDir: '../build/site',
    emptyOutDir: true,
    target: 'es2022',
    // The worker's transformers.js transform is slow by design; a timing report on every build is noise.
    rollupOptions: { checks: { pluginTimings: false } },
  },
  preview: { host: '127.0.0.1', port: 5173, headers: isolation },
  server: { host: '127.0.0.1', headers: isolation },
});
