/**
 * The onnxruntime an `OnnxPolicy` samples with, as the graph engine's runtime, so the training
 * graphs run on the same kernels (and, in a page, the same WASM build and thread count) as the
 * sampler: transformers.js runs onnxruntime-node in Node and imports `onnxruntime-web/webgpu` in
 * browsers; importing the same module here gets the same instance, not a second copy.
 */
import { ModelLoadError } from '../../errors.js';
import { isNodeRuntime } from '../../policy/onnx/runtime.js';
import type { GraphRuntime } from './runtime.js';

/** onnxruntime-node's name, kept out of browser bundles (which never take this branch). */
const NODE_RUNTIME = 'onnxruntime-node';

export async function policyGraphRuntime(): Promise<GraphRuntime> {
  try {
    const module: unknown = isNodeRuntime() ? await import(/* @vite-ignore */ NODE_RUNTIME) : await import('onnxruntime-web/webgpu');
    return module as GraphRuntime;
  } catch (cause) {
    throw new ModelLoadError(`The onnxruntime engine needs the onnxruntime the policy runs on (${isNodeRuntime() ? 'onnxruntime-node' : 'onnxruntime-web'}), which could not be loaded: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/**
 * Session options for the policy's backend: its execution provider in a page, onnxruntime-node's
 * CPU default in Node. Warnings are left out (on WebGPU onnxruntime says at every session that it
 * keeps shape ops on the CPU, as it should); errors still show.
 */
export function graphSessionOptions(backend: string): Record<string, unknown> {
  return isNodeRuntime() || backend === 'cpu' ? {} : { executionProviders: [backend], logSeverityLevel: 3 };
}
