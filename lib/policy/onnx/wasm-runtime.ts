/**
 * onnxruntime-web's WebAssembly runtime in a browser: which of its builds a page downloads, and how
 * many threads it runs. Both are settled once per page or worker, when the first session is made.
 *
 * - Files. transformers.js points onnxruntime-web at jsDelivr; an offline-first app cannot depend
 *   on that. Without `wasmPaths`, onnxruntime-web uses the glue code built into its bundle and finds
 *   the `.wasm` next to its own module (`new URL(..., import.meta.url)`, which Vite and webpack emit
 *   as an asset): the WebGPU build's file, whatever the backend. With `wasmPaths` naming a folder
 *   where onnxruntime-web's `dist/` files are served, the policy loads the smallest build that runs
 *   the backend: `ort-wasm-simd-threaded.wasm` for WebAssembly, the `.asyncify` build (WebGPU's)
 *   only for WebGPU.
 * - Threads. onnxruntime-web's own default is half the cores, at most 4 (one thread on 2 cores).
 *   The policy asks for every core (at most 16) where threads can run: the page is cross-origin
 *   isolated (COOP/COEP headers), and the glue code is a file of its own (`wasmPaths`); a glue
 *   bundled into an app's chunk cannot start thread workers (they would run the app's code).
 */
import { InvalidInputError, ModelLoadError } from '../../errors.js';
import type { Backend } from './device.js';

export type WasmPaths = string | { mjs?: string; wasm?: string };

export interface WasmSetup {
  /** Threads onnxruntime-web was asked for. */
  threads: number;
  /** Why there are not more, when there is one. */
  reason?: string;
  /** The `.wasm` file's URL, when the policy named it. */
  wasmUrl?: string;
  /** Every runtime file the policy named (the `.wasm` and its glue `.mjs`), checked before loading. */
  files?: string[];
}

interface OrtWasmFlags {
  wasmPaths?: WasmPaths;
  numThreads?: number;
}

const MAX_THREADS = 16;
const PLAIN = 'ort-wasm-simd-threaded';
const WEBGPU = 'ort-wasm-simd-threaded.asyncify';

/** What the first load in this page or worker chose; later loads share the runtime. */
let chosen: { build: 'plain' | 'webgpu' | 'embedded' | 'custom'; setup: WasmSetup } | undefined;

/** `onnx` is transformers.js' `env.backends.onnx` (onnxruntime's `env`). */
export function configureWasm(onnx: unknown, backend: Backend, wasmPaths: WasmPaths | undefined, threads: number | undefined): WasmSetup {
  const wasm = (onnx as { wasm?: OrtWasmFlags }).wasm;
  if (!wasm) return { threads: 1 };
  if (chosen) {
    if (chosen.build === 'plain' && backend === 'webgpu') {
      throw new ModelLoadError(
        "onnxruntime-web already runs its WebAssembly-only build in this page or worker, which has no WebGPU. Load a WebGPU model in a worker of its own (as the playground does), or load it before any WebAssembly one.",
      );
    }
    return chosen.setup;
  }
  let build: 'plain' | 'webgpu' | 'embedded' | 'custom';
  let wasmUrl: string | undefined;
  let files: string[] = [];
  if (typeof wasmPaths === 'string') {
    const folder = wasmPaths.endsWith('/') ? wasmPaths : `${wasmPaths}/`;
    build = backend === 'webgpu' ? 'webgpu' : 'plain';
    const name = build === 'webgpu' ? WEBGPU : PLAIN;
    wasmUrl = `${folder}${name}.wasm`;
    wasm.wasmPaths = { mjs: `${folder}${name}.mjs`, wasm: wasmUrl };
    files = [wasmUrl, `${folder}${name}.mjs`];
  } else if (wasmPaths !== undefined) {
    build = 'custom';
    wasmUrl = wasmPaths.wasm;
    wasm.wasmPaths = wasmPaths;
    files = [wasmPaths.wasm, wasmPaths.mjs].filter((file): file is string => typeof file === 'string');
  } else {
    build = 'embedded';
    if (JSON.stringify(wasm.wasmPaths ?? '').includes('cdn.jsdelivr.net')) wasm.wasmPaths = undefined;
  }
  const setup = threadCount(threads, build !== 'embedded' && (build !== 'custom' || typeof (wasmPaths as { mjs?: string }).mjs === 'string'));
  wasm.numThreads = setup.threads;
  chosen = { build, setup: { ...setup, ...(wasmUrl ? { wasmUrl } : {}), ...(files.length ? { files } : {}) } };
  return chosen.setup;
}

function threadCount(requested: number | undefined, separateGlue: boolean): WasmSetup {
  if (requested !== undefined && !(Number.isInteger(requested) && requested >= 1)) {
    throw new InvalidInputError('threads', `must be a positive integer, got ${String(requested)}.`);
  }
  if (requested === 1) return { threads: 1, reason: 'one thread, as requested' };
  const isolated = (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true;
  if (!isolated) return { threads: 1, reason: 'the page is not cross-origin isolated (COOP/COEP headers), so WebAssembly runs one thread' };
  if (!separateGlue) return { threads: 1, reason: "onnxruntime-web's files are bundled into the app; pass wasmPaths (a folder serving them) for threads" };
  const cores = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1;
  return { threads: requested ?? Math.max(1, Math.min(MAX_THREADS, cores)) };
}

/** The files already found in this page or worker: each is asked for once. */
const found = new Set<string>();

/**
 * Asks for the runtime files the policy named before onnxruntime-web does, so a missing one fails
 * with its URL. onnxruntime-web itself only logs a failed preload and goes on; in a worker of a
 * webpack bundle it then waits for the glue it could not fetch and the load never settles. A server
 * that refuses HEAD (405, 501) is left to onnxruntime-web's own request.
 */
export async function checkWasmFiles(setup: WasmSetup | undefined): Promise<void> {
  for (const file of setup?.files ?? []) {
    if (found.has(file)) continue;
    let answer: string;
    try {
      const response = await fetch(file, { method: 'HEAD' });
      if (response.ok || response.status === 405 || response.status === 501) {
        found.add(file);
        continue;
      }
      answer = `${file} answered ${response.status} ${response.statusText}`.trim();
    } catch (error) {
      answer = `${file} could not be fetched (${error instanceof Error ? error.message : String(error)})`;
    }
    throw wasmLoadFailure(new Error(answer), setup) ?? new ModelLoadError(answer);
  }
}

/**
 * A load failure that is onnxruntime-web's own files, not the model's: the `.wasm` (or its glue
 * code) was not found or is not WebAssembly (a 404 page served in its place).
 */
export function wasmLoadFailure(cause: unknown, setup: WasmSetup | undefined): ModelLoadError | undefined {
  const text = cause instanceof Error ? `${cause.message} ${String((cause as { cause?: unknown }).cause ?? '')}` : String(cause);
  const runtimeFile = /magic word|both async and sync fetching of the wasm failed|failed to asynchronously prepare wasm|no available backend found|Failed to fetch dynamically imported module|wasm streaming compile failed|\.wasm|ort-wasm/i;
  if (!runtimeFile.test(text)) return undefined;
  const where = setup?.wasmUrl
    ? ` from ${setup.wasmUrl}`
    : " from beside onnxruntime-web's module in your bundle (Vite and webpack emit its .wasm there; esbuild does not)";
  return new ModelLoadError(
    `onnxruntime-web could not load its WebAssembly runtime${where}: ${text.trim().replace(/\.+$/, '')}. ` +
      "Serve the files of onnxruntime-web's dist/ folder (ort-wasm-simd-threaded.wasm and .mjs, plus the .asyncify pair for WebGPU) " +
      "and pass their folder as loadOnnxPolicy({ wasmPaths: '/ort/' }); see webgrpo's docs/installing.md, \"Files a page serves\".",
    { cause },
  );
}
