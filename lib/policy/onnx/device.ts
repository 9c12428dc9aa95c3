/**
 * Which execution provider to use. Node runs onnxruntime-node on the CPU. Browsers run
 * onnxruntime-web: WebGPU when a hardware adapter exists, else WebAssembly; `auto` says why in the
 * policy's `info.note`. A software adapter (SwiftShader, llvmpipe, WARP: the CPU emulating a GPU)
 * is never taken by `auto`: it computes correctly and tens of times slower than WebAssembly.
 */
import { InvalidInputError, ModelLoadError } from '../../errors.js';

export type OnnxDevice = 'auto' | 'webgpu' | 'wasm' | 'cpu';
export type Backend = 'webgpu' | 'wasm' | 'cpu';

export interface DeviceChoice {
  backend: Backend;
  note?: string;
}

/** What a WebGPU adapter says of itself (`GPUAdapter.info`, and the older `isFallbackAdapter`). */
export interface AdapterLike {
  info?: { vendor?: string; architecture?: string; device?: string; description?: string; isFallbackAdapter?: boolean };
  isFallbackAdapter?: boolean;
}

const SOFTWARE_ADAPTER = /swiftshader|llvmpipe|lavapipe|softpipe|microsoft basic render|\bwarp\b/i;

/** The adapter's name for people: "nvidia ampere", "google swiftshader", ... */
export function adapterName(adapter: AdapterLike): string {
  const info = adapter.info ?? {};
  return [info.vendor, info.architecture || info.device || info.description].filter(Boolean).join(' ') || 'unnamed adapter';
}

/** True for a fallback adapter or a CPU implementation of WebGPU. */
export function isSoftwareAdapter(adapter: AdapterLike): boolean {
  if (adapter.isFallbackAdapter === true || adapter.info?.isFallbackAdapter === true) return true;
  const info = adapter.info ?? {};
  return SOFTWARE_ADAPTER.test([info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' '));
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
  if (requested === 'webgpu') {
    if (adapter) return { backend: 'webgpu', note: `WebGPU, as requested (${adapterName(adapter)})` };
    throw new ModelLoadError("device 'webgpu' was requested but this browser offers no WebGPU adapter; use 'auto' to fall back to WebAssembly.");
  }
  if (!adapter) return { backend: 'wasm', note: 'no WebGPU adapter in this browser, so WebAssembly' };
  if (isSoftwareAdapter(adapter)) {
    return { backend: 'wasm', note: `the only WebGPU adapter is software (${adapterName(adapter)}), so WebAssembly; ask for 'webgpu' to use it anyway` };
  }
  return { backend: 'webgpu', note: `WebGPU adapter found (${adapterName(adapter)})` };
}

async function requestAdapter(): Promise<AdapterLike | null> {
  const gpu = (globalThis.navigator as { gpu?: { requestAdapter(): Promise<AdapterLike | null> } } | undefined)?.gpu;
  if (!gpu) return null;
  try {
    return await gpu.requestAdapter();
  } catch {
    return null;
  }
}
