/**
 * A loaded policy's model as a graph that can be read and replaced (model-graph.ts builds it):
 * the types alone, which the policy's public declarations name.
 */
import type { OrtSession } from './ort-types.js';

/** The base model as its files hold it. */
export interface ModelGraph {
  /**
   * The ONNX graph file's bytes (`onnx/model.onnx`, or the dtype's file); when its weights are in
   * external data, its references are renamed to the pieces of `externalData`. In Node the large
   * inline weights are read that way too (references into the graph file itself, `model.onnx@…`),
   * so pass `externalData` along wherever the graph goes (`readDecoderWeights`, a session).
   */
  graph: Uint8Array;
  /**
   * External data by the name the graph refers to it by: each external tensor's bytes on its own
   * (`model.onnx_data@1024`), read from the file's ranges, never the file whole.
   */
  externalData: Record<string, Uint8Array>;
  /** The model's config.json. */
  config: Record<string, unknown>;
}

export interface GraphAccess {
  read(): Promise<ModelGraph>;
  /** A session of `graph` (the hidden state exposed again when the policy has it), in place of the current one. */
  build(graph: Uint8Array): Promise<OrtSession>;
  /**
   * Like `build(graph)` where the host can hand the runtime a file path (Node): the session is
   * built from `graph` written beside the model's files, its references to the pieces of
   * `externalData` (a graph from `read()`, or a rewrite of it) pointing into those files again, so
   * no weight passes through JavaScript. Without `graph`, the base model's. Undefined where the
   * host cannot (a browser, files not on disk).
   */
  buildReferencing?(graph?: Uint8Array): Promise<OrtSession | undefined>;
}
