/**
 * The parts of onnxruntime the graph engine uses, as our own interfaces: onnxruntime-node's and
 * onnxruntime-web's InferenceSession and Tensor both fit, so the caller hands over whichever runs
 * where it is.
 */

export type GraphTensorType = 'float32' | 'float64' | 'float16' | 'int64' | 'uint8';

export interface GraphTensor {
  readonly data: ArrayLike<number | bigint>;
  readonly dims: readonly number[];
}

export interface GraphSession {
  run(feeds: Record<string, GraphTensor>): Promise<Record<string, GraphTensor>>;
  release?(): Promise<void>;
}

export interface GraphRuntime {
  InferenceSession: { create(model: Uint8Array, options?: Record<string, unknown>): Promise<GraphSession> };
  Tensor: new (type: GraphTensorType, data: Float32Array | Float64Array | Uint16Array | BigInt64Array | Uint8Array, dims: readonly number[]) => GraphTensor;
}
