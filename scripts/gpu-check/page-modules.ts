/**
 * Node's module resolution hooks for the check's page (registered by page-entry.ts): a module
 * imported from the page's origin is the file at that path, as the page's `fetch` answers it
 * (page-globals.ts). onnxruntime-web imports its glue code (`ort-wasm-simd-threaded*.mjs`) from
 * `wasmPaths`; it must be on the page's origin to run threads (else onnxruntime-web fetches it into
 * a blob: URL, which Node cannot import), and Node imports modules from files only.
 */
import { pathToFileURL } from 'node:url';
import { PAGE_ORIGIN } from './page-origin.js';

type Next = (specifier: string, context: unknown) => Promise<{ url: string }>;

export async function resolve(specifier: string, context: unknown, next: Next): Promise<{ url: string; shortCircuit?: boolean }> {
  if (!specifier.startsWith(`${PAGE_ORIGIN}/`)) return next(specifier, context);
  return { url: pathToFileURL(decodeURIComponent(new URL(specifier).pathname)).href, shortCircuit: true };
}
