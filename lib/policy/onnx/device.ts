/**
 * Which execution provider to use. Node runs onnxruntime-node on the CPU. Browsers run
 * onnxruntime-web: WebGPU when an adapter exists, else WebAssembly; `auto` says why in the
 * policy's `info.note`.
 */
import { InvalidInputError, ModelLoadError } from '../../errors.js';

export type OnnxDevice = 'auto' | 'webgpu' | 'wasm' | 'cpu';
export type Backend = 'webgpu' | 'wasm' | 'cpu';

export interface DeviceChoice {
  backend: Backend;
  note?: string;
}

export async function chooseDevice(requested: OnnxDevice, isNode: boolean): Promise<DeviceChoice> {
  if (!['auto', 'webgpu', 'wasm', 'cpu'].includes(requested)) {
    throw new InvalidInputError('device', `must be 'auto', 'webgpu', 'wasm' or 'cpu', got ${String(requested)}.`);
  }
  if (isNode) {
    if (requested === 'auto' || requested === 'cpu') return { backend: 'cpu', note: 'Node: onnxruntime-node on the CPU' };
    throw new InvalidInputError('device', `'${requested}' is for browsers; in Node use 'cpu' or 'auto'.`);
  }
  if (requested === 'cpu') throw new InvalidInputError('device', "'cpu' is for Node; in browsers use 'wasm', 'webgpu' or 'auto'.");
  if (requested === 'wasm') return { backend: 'wasm', note: 'WebAssembly, as requested' };
  const adapter = await requestAdapter();
  if (adapter) return { backend: 'webgpu', note: requested === 'auto' ? 'WebGPU adapter found' : 'WebGPU, as requested' };
  if (requested === 'webgpu') {
    throw new ModelLoadError("device 'webgpu' was requested but this browser offers no WebGPU adapter; use 'auto' to fall back to WebAssembly.");
  }
  return { backend: 'wasm', note: 'no WebGPU adapter in this browser, so WebAssembly' };
}

async function requestAdapter(): Promise<unknown> {
  const gpu = (globalThis.navigator as { gpu?: { requestAdapter(): Promise<unknown> } } | undefined)?.gpu;
  if (!gpu) return null;
  try {
    return await gpu.requestAdapter();
  } catch {
    return null;
  }
}
