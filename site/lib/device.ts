/**
 * What this browser offers for running a model: a WebGPU adapter (and which), or why the model
 * will run on WebAssembly. Asked of `navigator.gpu` directly, so the header can say it before any
 * model runtime is loaded.
 */

export interface DeviceReport {
  webgpu: boolean;
  /** "nvidia ampere", "google swiftshader", ... when there is an adapter. */
  adapter?: string;
  /** Why there is no WebGPU, when there is none. */
  reason?: string;
}

interface AdapterInfoLike {
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
}
interface GpuLike {
  requestAdapter(): Promise<{ info?: AdapterInfoLike } | null>;
}

export async function probeDevice(nav: Navigator = navigator): Promise<DeviceReport> {
  const gpu = (nav as Navigator & { gpu?: GpuLike }).gpu;
  if (!gpu) return { webgpu: false, reason: 'this browser has no WebGPU (navigator.gpu is missing), so models run on WebAssembly' };
  try {
    const adapter = await gpu.requestAdapter();
    if (!adapter) return { webgpu: false, reason: 'WebGPU offered no adapter (GPU blocklisted or disabled), so models run on WebAssembly' };
    const info = adapter.info ?? {};
    const name = [info.vendor, info.architecture || info.device || info.description].filter(Boolean).join(' ');
    return { webgpu: true, adapter: name || 'unnamed adapter' };
  } catch (error) {
    return { webgpu: false, reason: `asking for a WebGPU adapter failed (${(error as Error).message}), so models run on WebAssembly` };
  }
}
