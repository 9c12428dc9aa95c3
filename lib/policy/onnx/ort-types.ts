/**
 * The parts of onnxruntime's Tensor and InferenceSession this backend uses, as our own interfaces:
 * the policy's public types name these, never transformers.js' or onnxruntime's declarations.
 */
import type { GpuBufferLike } from './webgpu-types.js';

export type TensorType = 'float32' | 'float16' | 'int64' | 'int32' | 'bool' | 'uint8';

/** The subset of onnxruntime's Tensor this backend uses. */
export interface OrtTensor {
  readonly type: string;
  readonly dims: readonly number[];
  readonly data: ArrayLike<number | bigint> & { buffer: ArrayBufferLike; byteOffset: number; byteLength: number };
  readonly location: 'cpu' | 'cpu-pinned' | 'gpu-buffer' | string;
  readonly gpuBuffer: GpuBufferLike;
  /** The data wherever it lives (a GPU buffer is read back). */
  getData?(): Promise<OrtTensor['data']>;
  dispose(): void;
}

export interface OrtTensorClass {
  new (type: TensorType, data: ArrayLike<number | bigint>, dims: readonly number[]): OrtTensor;
  fromGpuBuffer(buffer: GpuBufferLike, options: { dataType: 'float32' | 'float16'; dims: readonly number[]; dispose?: () => void }): OrtTensor;
}

export interface OrtValueMetadata {
  name: string;
  isTensor: boolean;
  type?: string;
  shape?: ReadonlyArray<number | string>;
}

/** The subset of onnxruntime's InferenceSession this backend uses. */
export interface OrtSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly OrtValueMetadata[];
  readonly outputMetadata?: readonly OrtValueMetadata[];
  run(feeds: Record<string, OrtTensor>, options?: OrtRunOptions): Promise<Record<string, OrtTensor>>;
  run(feeds: Record<string, OrtTensor>, fetches: Record<string, OrtTensor | null>, options?: OrtRunOptions): Promise<Record<string, OrtTensor>>;
}

/** The run options this backend sets: 0 verbose ... 3 error, 4 fatal (onnxruntime's severities). */
export interface OrtRunOptions {
  logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
}
