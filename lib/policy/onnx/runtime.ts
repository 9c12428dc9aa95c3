/**
 * Access to transformers.js and, through it, to onnxruntime. transformers.js is an optional peer
 * dependency, loaded on first use; onnxruntime is never imported directly: tensors are made with
 * the `Tensor` class transformers.js feeds its own sessions with (onnxruntime-node in Node, the
 * onnxruntime-web build transformers.js depends on in browsers), so there is no second copy.
 */
import { ModelLoadError } from '../../errors.js';
import type { OrtTensor, OrtTensorClass } from './ort-types.js';

export type Transformers = typeof import('@huggingface/transformers');

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
