/**
 * The few globals of a page that onnxruntime-web, transformers.js' web build and webgrpo's browser
 * entry read, given to a Node process, so the check runs the browser's code path (onnxruntime-web's
 * WebGPU and WebAssembly execution providers) with no browser at all:
 *
 * - `navigator.gpu` from Dawn's node binding (the `webgpu` npm package's `dawn.node`), and the
 *   `GPU*` constants and classes it exports (GPUBufferUsage, GPUMapMode, ...);
 * - `navigator.hardwareConcurrency` and `crossOriginIsolated`: Node has SharedArrayBuffer and
 *   worker threads, so onnxruntime-web's threaded build runs its threads as in an isolated page;
 * - `location`, the page's origin (page-origin.ts), and a `fetch` that answers it with the
 *   machine's files, as a page's server answers with its own (Node's fetch has no file: URLs
 *   either; those are answered too).
 *
 * One difference of dawn.node from a browser is patched: its `GPUQueue.writeBuffer` rejects a view
 * of a SharedArrayBuffer ("Invalid argument"), which is what onnxruntime-web's threaded build
 * hands it (its WebAssembly memory is shared); such data is copied to a plain buffer first.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { Readable } from 'node:stream';
import { PAGE_ORIGIN } from './page-origin.js';
import { fileURLToPath, pathToFileURL } from 'node:url';

interface DawnModule {
  create(options: string[]): { requestAdapter(options?: unknown): Promise<unknown> };
  globals: Record<string, unknown>;
}

interface QueueLike {
  writeBuffer(buffer: unknown, offset: number, data: unknown, dataOffset?: number, size?: number): void;
}

/** Installs the globals; `dawnIndex` is the `webgpu` package's index.js (its dawn.node beside it in dist/linux-x64/). */
export async function installPageGlobals(dawnIndex: string, dawnOptions: string[] = []): Promise<void> {
  const dawn = (await import(pathToFileURL(dawnIndex).href)) as DawnModule;
  Object.assign(globalThis, dawn.globals);
  const queue = (dawn.globals.GPUQueue as { prototype: QueueLike } | undefined)?.prototype;
  if (!queue) throw new Error(`${dawnIndex} exports no GPUQueue: not Dawn's node binding?`);
  const writeBuffer = queue.writeBuffer;
  queue.writeBuffer = function (buffer, offset, data, dataOffset, size) {
    return writeBuffer.call(this, buffer, offset, unshared(data), dataOffset, size);
  };
  const gpu = dawn.create(dawnOptions);
  const navigator = { gpu, hardwareConcurrency: availableParallelism(), userAgent: `Node.js/${process.versions.node} (webgrpo gpu-check)` };
  Object.defineProperty(globalThis, 'navigator', { value: navigator, configurable: true, writable: true });
  Object.defineProperty(globalThis, 'crossOriginIsolated', { value: true, configurable: true });
  const page = new URL(`${PAGE_ORIGIN}/`);
  Object.defineProperty(globalThis, 'location', { value: page, configurable: true });
  globalThis.fetch = pageFetch(globalThis.fetch, page);
}

/** A plain copy of a view of a SharedArrayBuffer (the same element type and length), else the data itself. */
export function unshared(data: unknown): unknown {
  if (data instanceof SharedArrayBuffer) return new Uint8Array(data).slice().buffer;
  if (ArrayBuffer.isView(data) && data.buffer instanceof SharedArrayBuffer) {
    if (data instanceof DataView) return new DataView(new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice().buffer);
    return (data as unknown as { slice(): ArrayBufferView }).slice();
  }
  return data;
}

/**
 * `fetch` that answers `page`'s origin and file: URLs with the files at their paths (GET and HEAD;
 * 200, or 404 for what is not a file); every other URL goes to `next`. Paths resolve against
 * `page`, as in a page.
 */
export function pageFetch(next: typeof fetch, page: URL): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input), page);
    let path: string;
    if (url.protocol === 'file:') path = fileURLToPath(url);
    else if (url.origin === page.origin) path = decodeURIComponent(url.pathname);
    else return next(input, init);
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    let size: number;
    try {
      const info = await stat(path);
      if (!info.isFile()) return new Response(null, { status: 404, statusText: 'Not Found' });
      size = info.size;
    } catch {
      return new Response(null, { status: 404, statusText: 'Not Found' });
    }
    const headers = { 'content-length': String(size) };
    if (method === 'HEAD') return new Response(null, { status: 200, headers });
    const body = Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>;
    return new Response(body, { status: 200, headers });
  };
}
