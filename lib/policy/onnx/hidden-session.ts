/**
 * The decoder session rebuilt from its graph with the hidden state exposed (hidden-state.ts).
 * transformers.js resolves, downloads and caches the model files and builds the first session;
 * this module reads the same graph file (from the folder, the page's origin, or transformers.js'
 * cache of hub files), rewrites it, releases the first session and creates the new one with the
 * same execution provider, external data files and GPU-resident outputs. Weights are never held
 * by two sessions at once; the cost is building the session twice at load.
 */
import { ModelLoadError } from '../../errors.js';
import type { Backend } from './device.js';
import { exposeHiddenState } from './hidden-state.js';
import type { ModelLocation } from './location.js';
import type { OrtSession, Transformers } from './runtime.js';

interface SessionClass {
  create(model: Uint8Array, options: Record<string, unknown>): Promise<OrtSession>;
}

export interface HiddenSession {
  session: OrtSession;
  /** The hidden-state output's name. */
  hidden: string;
}

/** The graph file a session was built from, and its external data files. */
export interface ModelFiles {
  /** The graph file's path in the model (`onnx/model.onnx`). */
  graphFile: string;
  graph: Uint8Array;
  /** External data files by the name the graph refers to them by (`model.onnx_data`). */
  externalData: Record<string, Uint8Array>;
}

/**
 * Reads the files `session` was built from, as transformers.js found them for `location` (its
 * `config.dtype` names the file it loaded).
 */
export async function readModelFiles(transformers: Transformers, location: ModelLocation, modelConfig: unknown, backend: Backend, session: OrtSession, isNode: boolean): Promise<ModelFiles> {
  const dtype = (session as { config?: { dtype?: string } }).config?.dtype;
  const files = await transformers.ModelRegistry.get_model_files(location.id, {
    config: modelConfig as never,
    dtype: dtype as never,
    device: backend as never,
  });
  const graphFile = files.find((file) => file.endsWith('.onnx'));
  if (!graphFile) throw new ModelLoadError(`Could not tell which ONNX file ${location.id} was loaded from.`);
  const dataFiles = files.filter((file) => file.startsWith(`${graphFile}_data`));
  const read = (file: string) => readModelFile(transformers, location, file, isNode);
  const [graph, ...data] = await Promise.all([read(graphFile), ...dataFiles.map(read)]);
  return { graphFile, graph, externalData: Object.fromEntries(dataFiles.map((file, i) => [file.slice(file.lastIndexOf('/') + 1), data[i]])) };
}

/**
 * A session for `graph` made like `like` (the one transformers.js made): the same execution
 * provider, the external data files, and on WebGPU the cache (and `gpuOutputs`) left on the GPU.
 */
export async function createSessionLike(like: OrtSession, graph: Uint8Array, backend: Backend, externalData: Record<string, Uint8Array>, gpuOutputs: string[] = []): Promise<OrtSession> {
  const Session = like.constructor as unknown as SessionClass;
  // Errors only, as transformers.js creates its sessions: onnxruntime's warnings (nodes it places
  // on the CPU beside the WebGPU provider, by design) would reach the page as console errors.
  const options: Record<string, unknown> = { executionProviders: [backend], logSeverityLevel: 3 };
  const data = Object.entries(externalData);
  if (data.length > 0) options.externalData = data.map(([path, bytes]) => ({ path, data: bytes }));
  if (backend === 'webgpu') {
    // The cache and the hidden state stay on the GPU, as transformers.js keeps the cache.
    const names = [...like.outputNames.filter((name) => name.startsWith('present')), ...gpuOutputs];
    options.preferredOutputLocation = Object.fromEntries(names.map((name) => [name, 'gpu-buffer']));
  }
  return Session.create(graph, options);
}

/**
 * `old` must be the session transformers.js made for `location`. On success `old` is released; on
 * failure it is released too and the error thrown.
 */
export async function rebuildWithHiddenState(
  transformers: Transformers,
  location: ModelLocation,
  modelConfig: unknown,
  backend: Backend,
  old: OrtSession,
  isNode: boolean,
): Promise<HiddenSession> {
  const files = await readModelFiles(transformers, location, modelConfig, backend, old, isNode);
  const rewritten = await exposeHiddenState(files.graph);
  await (old as OrtSession & { release(): Promise<void> }).release();
  try {
    return { session: await createSessionLike(old, rewritten.bytes, backend, files.externalData, [rewritten.name]), hidden: rewritten.name };
  } catch (cause) {
    throw new ModelLoadError(`Could not build the decoder with its hidden state exposed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** One file of the model, from where transformers.js found it. */
async function readModelFile(transformers: Transformers, location: ModelLocation, file: string, isNode: boolean): Promise<Uint8Array> {
  const { env } = transformers;
  if (isNode) {
    const { readFile } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const paths = location.local ? [join(location.id, file)] : [join(String(env.cacheDir ?? ''), location.id, file)];
    for (const path of paths) {
      try {
        return new Uint8Array(await readFile(path));
      } catch {
        // Not there: fall through to the hub below (or fail for a local folder).
      }
    }
    if (location.local) throw new ModelLoadError(`Could not read ${join(location.id, file)}.`);
  } else if (location.local) {
    return fetchBytes(`${location.id}/${file}`);
  }
  // A hub model: transformers.js keeps browser downloads in the Cache API under their URL.
  const url = `${env.remoteHost.replace(/\/+$/, '')}/${env.remotePathTemplate.replaceAll('{model}', location.id).replaceAll('{revision}', 'main').replace(/^\/+/, '')}${file}`;
  const caches = (globalThis as { caches?: CacheStorage }).caches;
  if (caches && env.useBrowserCache) {
    const cached = await (await caches.open(env.cacheKey ?? 'transformers-cache')).match(url);
    if (cached) return new Uint8Array(await cached.arrayBuffer());
  }
  return fetchBytes(url);
}

async function fetchBytes(url: string): Promise<Uint8Array> {
  const response = await fetch(url);
  if (!response.ok) throw new ModelLoadError(`Could not fetch ${url} (HTTP ${response.status}).`);
  return new Uint8Array(await response.arrayBuffer());
}
