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
import { readExternalPieces } from './external-data.js';
import { exposeHiddenState } from './hidden-state.js';
import type { ModelHost, ModelLocation } from './location.js';
import type { OrtSession } from './ort-types.js';
import type { Transformers } from './runtime.js';
import { optionsOf, remember } from './session-options.js';

interface SessionClass {
  create(model: Uint8Array | string, options: Record<string, unknown>): Promise<OrtSession>;
}

export interface HiddenSession {
  session: OrtSession;
  /** The hidden-state output's name. */
  hidden: string;
}

/** The graph file a session was built from, and its external data. */
export interface ModelFiles {
  /** The graph file's path in the model (`onnx/model.onnx`). */
  graphFile: string;
  /** The graph, its external references naming the pieces of `externalData` (external-data.ts). */
  graph: Uint8Array;
  /** Each external tensor's bytes by the name the graph now refers to them by (`model.onnx_data@1024`). */
  externalData: Record<string, Uint8Array>;
}

/**
 * Reads the files `session` was built from, as transformers.js found them for `location` (its
 * `config.dtype` names the file it loaded): the graph, and of its external data files only the
 * tensors' bytes, each on its own.
 */
export async function readModelFiles(transformers: Transformers, location: ModelLocation, modelConfig: unknown, backend: Backend, session: OrtSession, host: ModelHost): Promise<ModelFiles> {
  const graphFile = await graphFileOf(transformers, location, modelConfig, backend, session);
  // The graph's own references say which data files and bytes it needs (config.json may not list them).
  const folder = graphFile.slice(0, graphFile.lastIndexOf('/') + 1);
  // Where the host streams, the graph and its inline weights come in one pass.
  const streamed = await host.readModel?.(transformers.env, location, graphFile);
  if (streamed) return { graphFile, ...streamed };
  // Where the host reads by position, the graph's inline weights are read one by one too.
  const bytes = (await host.readGraph?.(transformers.env, location, graphFile)) ?? (await host.readFile(transformers.env, location, graphFile));
  const { graph, externalData } = await readExternalPieces(bytes, (file, ranges) =>
    host.readRanges(transformers.env, location, `${folder}${file}`, ranges),
  );
  return { graphFile, graph, externalData };
}

/** The graph file's path in the model that transformers.js built `session` from (its `config.dtype` names it). */
export async function graphFileOf(transformers: Transformers, location: ModelLocation, modelConfig: unknown, backend: Backend, session: OrtSession): Promise<string> {
  const dtype = (session as { config?: { dtype?: string } }).config?.dtype;
  const files = await transformers.ModelRegistry.get_model_files(location.id, {
    config: modelConfig as never,
    dtype: dtype as never,
    device: backend as never,
  });
  const graphFile = files.find((file) => file.endsWith('.onnx'));
  if (!graphFile) throw new ModelLoadError(`Could not tell which ONNX file ${location.id} was loaded from.`);
  return graphFile;
}

/**
 * A session for `graph` (its bytes, or in Node its file's path) made like `like` (the one
 * transformers.js made): the same execution provider, the external data files, and on WebGPU the
 * cache (and `gpuOutputs`) left on the GPU, and the session options `like` was made with (session-options.ts).
 */
export async function createSessionLike(like: OrtSession, graph: Uint8Array | string, backend: Backend, externalData: Record<string, Uint8Array>, gpuOutputs: string[] = []): Promise<OrtSession> {
  const Session = like.constructor as unknown as SessionClass;
  // Errors only, as transformers.js creates its sessions: onnxruntime's warnings (nodes it places
  // on the CPU beside the WebGPU provider, by design) would reach the page as console errors.
  const options: Record<string, unknown> = { logSeverityLevel: 3, ...optionsOf(like), executionProviders: [backend] };
  const data = Object.entries(externalData);
  if (data.length > 0) options.externalData = data.map(([path, bytes]) => ({ path, data: bytes }));
  if (backend === 'webgpu') {
    // The cache and the hidden state stay on the GPU, as transformers.js keeps the cache.
    const names = [...like.outputNames.filter((name) => name.startsWith('present')), ...gpuOutputs];
    options.preferredOutputLocation = Object.fromEntries(names.map((name) => [name, 'gpu-buffer']));
  }
  return remember(await Session.create(graph, options), optionsOf(like));
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
  host: ModelHost,
): Promise<HiddenSession> {
  const files = await readModelFiles(transformers, location, modelConfig, backend, old, host);
  const rewritten = await exposeHiddenState(files.graph);
  await (old as OrtSession & { release(): Promise<void> }).release();
  try {
    return { session: await createSessionLike(old, rewritten.bytes, backend, files.externalData, [rewritten.name]), hidden: rewritten.name };
  } catch (cause) {
    throw new ModelLoadError(`Could not build the decoder with its hidden state exposed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
