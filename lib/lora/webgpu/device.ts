/**
 * The WebGPU device a LoRA run trains on: the policy's own when it samples on WebGPU (onnxruntime-web's
 * device; the trainer's buffers and kernels sit next to the session's), else one requested here,
 * once per realm and shared by the runs after it, with the adapter's largest storage binding and
 * buffer (the spec's defaults, 128 and 256 MiB, are below what a bigger model's activations need).
 */
import { UnsupportedError } from '../../errors.js';
import type { GpuDeviceLike } from '../../policy/onnx/webgpu-types.js';

interface AdapterLimits {
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
}
interface GpuAdapterLike {
  limits: AdapterLimits;
  requestDevice(descriptor?: { requiredLimits?: Partial<AdapterLimits> }): Promise<GpuDeviceLike & { lost?: Promise<unknown> }>;
}
interface GpuLike {
  requestAdapter(): Promise<GpuAdapterLike | null>;
}

let requested: Promise<GpuDeviceLike> | undefined;

/** The policy's device if it has one, else this realm's requested one; UnsupportedError without WebGPU. */
export function loraTrainingDevice(policy: { webgpuDevice?(): GpuDeviceLike | undefined }): Promise<GpuDeviceLike> {
  const own = policy.webgpuDevice?.();
  if (own) return Promise.resolve(own);
  requested ??= requestDevice().catch((error: unknown) => {
    requested = undefined;
    throw error;
  });
  return requested;
}

async function requestDevice(): Promise<GpuDeviceLike> {
  const gpu = (globalThis.navigator as { gpu?: GpuLike } | undefined)?.gpu;
  if (!gpu) throw new UnsupportedError("Training on WebGPU needs WebGPU, and this runtime has none (navigator.gpu is missing); train with engine 'cpu'.");
  const adapter = await gpu.requestAdapter();
  if (!adapter) throw new UnsupportedError("This browser offers no WebGPU adapter, so LoRA cannot train on WebGPU; train with engine 'cpu'.");
  const { maxStorageBufferBindingSize, maxBufferSize } = adapter.limits;
  const device = await adapter.requestDevice({ requiredLimits: { maxStorageBufferBindingSize, maxBufferSize } });
  // A lost device (driver reset, tab in the background too long) is requested again by the next run.
  void device.lost?.then(() => {
    requested = undefined;
  });
  return device;
}
