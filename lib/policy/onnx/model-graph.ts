/**
 * A loaded policy's model as a graph that can be read and replaced: the base model's files (what a
 * LoRA merge starts from, lib/lora/onnx-merge.ts) and a new session built from another graph of
 * the same model (the merged weights), swapped in for the one the policy samples and scores with.
 * The swap builds the new session before releasing the old one, so a failed build leaves the
 * policy as it was; for that moment both sessions' weights are in memory.
 */
import { ModelLoadError } from '../../errors.js';
import type { Backend } from './device.js';
import { piecesAsFiles } from './external-data.js';
import { createSessionLike, graphFileOf, readModelFiles, type ModelFiles } from './hidden-session.js';
import type { GraphAccess } from './graph.js';
import { exposeHiddenState } from './hidden-state.js';
import type { ModelHost, ModelLocation } from './location.js';
import type { OrtSession } from './ort-types.js';
import type { Transformers } from './runtime.js';
import { isDetached } from './detach.js';

export interface GraphSource {
  transformers: Transformers;
  location: ModelLocation;
  modelConfig: unknown;
  backend: Backend;
  host: ModelHost;
  /** The session transformers.js made (its dtype names the file; it may be released since). */
  loaded: OrtSession;
  /** The session running now, which a new one is made like. */
  current(): OrtSession;
  /** The hidden-state output's name when the policy exposes it. */
  hidden: string | undefined;
}

export function graphAccess(source: GraphSource): GraphAccess {
  // The files are held only while someone else holds them (a LoRA engine reading its weights, a
  // merge, a session being built from them): kept for the policy's life they would be a second
  // copy of every weight beside the session's. Read again when asked for after that.
  let pending: Promise<ModelFiles> | undefined;
  let held: { graph: WeakRef<Uint8Array>; externalData: WeakRef<Record<string, Uint8Array>> } | undefined;
  const readFiles = async (): Promise<Pick<ModelFiles, 'graph' | 'externalData'>> => {
    const graph = held?.graph.deref();
    const externalData = held?.externalData.deref();
    // A piece a LoRA engine's head moved into its session is detached (head-runs.ts): read the files again.
    if (graph && externalData && !Object.values(externalData).some(isDetached)) return { graph, externalData };
    pending ??= readModelFiles(source.transformers, source.location, source.modelConfig, source.backend, source.loaded, source.host);
    try {
      const files = await pending;
      held = { graph: new WeakRef(files.graph), externalData: new WeakRef(files.externalData) };
      return files;
    } finally {
      pending = undefined;
    }
  };
  const config = () => ({ ...(source.modelConfig as Record<string, unknown>) });
  return {
    async read() {
      const { graph, externalData } = await readFiles();
      return { graph, externalData, config: config() };
    },
    async build(graph) {
      const { externalData } = await readFiles();
      const { bytes, gpuOutputs } = await withHidden(source, graph);
      return create(() => createSessionLike(source.current(), bytes, source.backend, externalData, gpuOutputs));
    },
    async buildReferencing(graph) {
      const { host, transformers, location } = source;
      if (!host.readGraph || !host.withGraphOnDisk) return undefined;
      const graphFile = await graphFileOf(transformers, location, source.modelConfig, source.backend, source.loaded);
      const structure = graph ? piecesAsFiles(graph) : await host.readGraph(transformers.env, location, graphFile);
      if (!structure) return undefined;
      const { bytes, gpuOutputs } = await withHidden(source, structure);
      return host.withGraphOnDisk(transformers.env, location, graphFile, bytes, (path) =>
        create(() => createSessionLike(source.current(), path, source.backend, {}, gpuOutputs)),
      );
    },
  };
}

/** `graph` with the hidden state exposed again when the policy reads it. */
async function withHidden(source: GraphSource, graph: Uint8Array): Promise<{ bytes: Uint8Array; gpuOutputs: string[] }> {
  if (source.hidden === undefined) return { bytes: graph, gpuOutputs: [] };
  const rewritten = await exposeHiddenState(graph);
  if (rewritten.name !== source.hidden) throw new ModelLoadError(`The new graph's hidden state is ${rewritten.name}; the policy reads ${source.hidden}.`);
  return { bytes: rewritten.bytes, gpuOutputs: [rewritten.name] };
}

async function create(make: () => Promise<OrtSession>): Promise<OrtSession> {
  try {
    return await make();
  } catch (cause) {
    throw new ModelLoadError(`Could not build a session from the new graph: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
