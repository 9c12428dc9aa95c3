/**
 * What this browser offers for running a model: a WebGPU adapter (and which, and whether it is a
 * software one), or why the model will run on WebAssembly. Asked of `navigator.gpu` directly, so
 * the header can say it before any model runtime is loaded.
 */
import { adapterName, isSoftwareAdapter, type AdapterLike } from '../../lib/onnx.browser.js';

export interface DeviceReport {
  webgpu: boolean;
  /** "nvidia ampere", "google swiftshader", ... when there is an adapter. */
  adapter?: string;
  /** The adapter is the CPU emulating a GPU (SwiftShader, llvmpipe): Auto does not use it. */
  software?: boolean;
  /** Why there is no WebGPU, when there is none. */
  reason?: string;
}

interface GpuLike {
  requestAdapter(): Promise<AdapterLike | null>;
}

export async function probeDevice(nav: Navigator = navigator): Promise<DeviceReport> {
  const gpu = (nav as Navigator & { gpu?: GpuLike }).gpu;
  if (!gpu) return { webgpu: false, reason: 'this browser has no WebGPU (navigator.gpu is missing), so models run on WebAssembly' };
  try {
    const adapter = await gpu.requestAdapter();
    if (!adapter) return { webgpu: false, reason: 'WebGPU offered no adapter (GPU blocklisted or disabled), so models run on WebAssembly' };
    return { webgpu: true, adapter: adapterName(adapter), ...(isSoftwareAdapter(adapter) ? { software: true } : {}) };
  } catch (error) {
    return { webgpu: false, reason: `asking for a WebGPU adapter failed (${(error as Error).message}), so models run on WebAssembly` };
  }
}

/** True when Auto should weigh WebGPU against WebAssembly: a hardware adapter exists. */
export function hardwareWebGpu(report: DeviceReport | null): boolean {
  return report?.webgpu === true && report.software !== true;
}
