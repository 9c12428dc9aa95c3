/**
 * Access to transformers.js and, through it, to onnxruntime. transformers.js is an optional peer
 * dependency, loaded on first use; onnxruntime is never imported directly: tensors are made with
 * the `Tensor` class transformers.js feeds its own sessions with (onnxruntime-node in Node, the
 * onnxruntime-web build transformers.js depends on in browsers), so there is no second copy.
 */
import { ModelLoadError } from '../../errors.js';
import type { GpuBufferLike } from './webgpu-types.js';

export type Transformers = typeof import('@huggingface/transformers');

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
  run(feeds: Record<string, OrtTensor>, fetches?: Record<string, OrtTensor | null>): Promise<Record<string, OrtTensor>>;
}

export interface Runtime {
  transformers: Transformers;
  Tensor: OrtTensorClass;
}

let runtime: Promise<Runtime> | undefined;

export function loadRuntime(): Promise<Runtime> {
  runtime ??= (async () => {
    let transformers: Transformers;
    try {
      transformers = await import('@huggingface/transformers');
    } catch (cause) {
      runtime = undefined;
      throw new ModelLoadError(
        'webgrpo/onnx needs @huggingface/transformers (>= 4.3). Install it next to webgrpo: npm install @huggingface/transformers',
        { cause },
      );
    }
    // transformers.js wraps onnxruntime tensors; the wrapped object's class is onnxruntime's own.
    const probe = new transformers.Tensor('float32', new Float32Array(1), [1]) as unknown as { ort_tensor: OrtTensor };
    const Tensor = probe.ort_tensor.constructor as unknown as OrtTensorClass;
    return { transformers, Tensor };
  })();
  return runtime;
}

/** Node (or a runtime that answers as Node), as opposed to a page or worker. */
export function isNodeRuntime(): boolean {
  const versions = (globalThis as { process?: { versions?: { node?: string } } }).process?.versions;
  return typeof versions?.node === 'string' && typeof (globalThis as { window?: unknown }).window === 'undefined';
}
