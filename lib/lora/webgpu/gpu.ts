/**
 * The host side of the LoRA WGSL kernels: storage buffers, one pipeline per kernel (compiled once
 * per device), and a recording of dispatches into one command encoder per pass, each with its own
 * small uniform. Nothing is read back until `read`, which submits the recording and maps one
 * staging buffer for every range asked for.
 */
import { UnsupportedError } from '../../errors.js';
import { BufferUsage, MapMode, type GpuBufferLike, type GpuCommandEncoderLike, type GpuComputePipelineLike, type GpuDeviceLike } from '../../policy/onnx/webgpu-types.js';
import { gatherHalf, MATMUL_Q4, matmulHalf } from './frozen-kernels.js';
import * as K from './kernels.js';

export type TiledKernel = 'matmul' | 'matmulF16' | 'matmulBf16' | 'matmulQ4';
export type KernelName = TiledKernel | 'gather' | 'gatherF16' | 'gatherBf16' | 'scatter' | 'bias' | 'add' | 'rmsnorm' | 'rmsnormBackward' | 'rope' | 'attention' | 'attentionBackwardQ' | 'attentionBackwardKv' | 'swiglu' | 'swigluBackward' | 'softmax' | 'dlogits';

const SOURCES: Record<KernelName, string> = {
  matmul: K.MATMUL,
  matmulF16: matmulHalf('f16'),
  matmulBf16: matmulHalf('bf16'),
  matmulQ4: MATMUL_Q4,
  gather: K.GATHER,
  gatherF16: gatherHalf('f16'),
  gatherBf16: gatherHalf('bf16'),
  scatter: K.SCATTER,
  bias: K.BIAS,
  add: K.ADD,
  rmsnorm: K.RMSNORM,
  rmsnormBackward: K.RMSNORM_BACKWARD,
  rope: K.ROPE,
  attention: K.ATTENTION,
  attentionBackwardQ: K.ATTENTION_BACKWARD_Q,
  attentionBackwardKv: K.ATTENTION_BACKWARD_KV,
  swiglu: K.SWIGLU,
  swigluBackward: K.SWIGLU_BACKWARD,
  softmax: K.SOFTMAX,
  dlogits: K.DLOGITS,
};

const STORAGE = BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST;

/** A float32 (or u32) storage buffer of `length` elements. */
export interface Tensor {
  buffer: GpuBufferLike;
  length: number;
}

/** Strided matmul operands: C[M, N] = alpha A B (+ C), A(m, k) = a[m sam + k sak], B(k, n) = b[k sbk + n sbn]. */
export interface MatmulShape {
  M: number;
  N: number;
  K: number;
  sam: number;
  sak: number;
  sbk: number;
  sbn: number;
  alpha?: number;
  accumulate?: boolean;
}

const pipelines = new WeakMap<GpuDeviceLike, { ready: Promise<void>; byName: Record<KernelName, GpuComputePipelineLike> }>();

/** Every kernel's pipeline on `device`, compiled once; rejects with UnsupportedError if WebGPU refuses one. */
function compiled(device: GpuDeviceLike): { ready: Promise<void>; byName: Record<KernelName, GpuComputePipelineLike> } {
  let entry = pipelines.get(device);
  if (entry) return entry;
  device.pushErrorScope('validation');
  const byName = Object.fromEntries(
    (Object.keys(SOURCES) as KernelName[]).map((name) => [
      name,
      device.createComputePipeline({ label: `webgrpo lora ${name}`, layout: 'auto', compute: { module: device.createShaderModule({ code: SOURCES[name], label: `webgrpo lora ${name}` }), entryPoint: 'main' } }),
    ]),
  ) as Record<KernelName, GpuComputePipelineLike>;
  const ready = device.popErrorScope().then((error) => {
    if (error) throw new UnsupportedError(`WebGPU rejected webgrpo's LoRA kernels: ${error.message}`);
  });
  entry = { ready, byName };
  pipelines.set(device, entry);
  return entry;
}

export class GpuRecorder {
  readonly device: GpuDeviceLike;
  readonly #byName: Record<KernelName, GpuComputePipelineLike>;
  readonly ready: Promise<void>;
  #encoder: GpuCommandEncoderLike;
  /** Buffers of this recording (uniforms, scratch), in the order made; freed once they have run. */
  #temporaries: GpuBufferLike[] = [];
  /** Storage tensors among the temporaries not yet freed, with their bytes. */
  #live = new Map<GpuBufferLike, number>();
  #liveBytes = 0;
  #peakBytes = 0;

  constructor(device: GpuDeviceLike) {
    this.device = device;
    const { ready, byName } = compiled(device);
    this.ready = ready;
    this.#byName = byName;
    this.#encoder = device.createCommandEncoder({ label: 'webgrpo lora' });
  }

  /** A zeroed buffer of n floats (WebGPU zero-fills new buffers), or one holding `data`; temporary unless `keep`. */
  tensor(n: number, data?: Float32Array | Uint32Array, keep = false): Tensor {
    const limit = this.device.limits.maxStorageBufferBindingSize;
    if (n * 4 > limit) {
      throw new UnsupportedError(`A tensor of ${n} floats does not fit one WebGPU storage binding (${limit} bytes); train on fewer or shorter completions per group, or request the device with a larger maxStorageBufferBindingSize.`);
    }
    const size = Math.max(16, Math.ceil((n * 4) / 16) * 16);
    const buffer = this.device.createBuffer({ size, usage: STORAGE, label: 'webgrpo lora tensor' });
    if (data) this.device.queue.writeBuffer(buffer, 0, data);
    if (!keep) {
      this.#temporaries.push(buffer);
      this.#live.set(buffer, size);
      this.#liveBytes += size;
      this.#peakBytes = Math.max(this.#peakBytes, this.#liveBytes);
    }
    return { buffer, length: n };
  }

  /** Bytes of the recording's storage tensors alive now and at most since it began (uniforms aside). */
  get bytes(): { live: number; peak: number } {
    return { live: this.#liveBytes, peak: this.#peakBytes };
  }

  /** A point in the recording's allocations, for `release`. */
  mark(): number {
    return this.#temporaries.length;
  }

  /**
   * Submits what is recorded and frees the temporaries made since `from` (up to `to`), except
   * `keep`: WebGPU lets a buffer be destroyed once the work that uses it is submitted.
   */
  release(from: number, keep: Tensor[] = [], to = this.#temporaries.length): void {
    this.#submit();
    const kept = new Set(keep.map((t) => t.buffer));
    for (const buffer of this.#temporaries.slice(from, to)) if (!kept.has(buffer)) this.#destroy(buffer);
  }

  /** Submits what is recorded and frees these temporaries. */
  free(tensors: Tensor[]): void {
    this.#submit();
    for (const t of tensors) this.#destroy(t.buffer);
  }

  #submit(): void {
    this.device.queue.submit([this.#encoder.finish()]);
    this.#encoder = this.device.createCommandEncoder({ label: 'webgrpo lora' });
  }

  #destroy(buffer: GpuBufferLike): void {
    const size = this.#live.get(buffer);
    if (size !== undefined) {
      this.#live.delete(buffer);
      this.#liveBytes -= size;
    }
    buffer.destroy();
  }

  /** Runs `name` with one thread per item (u32s and f32s are the kernel's Params). */
  run(name: Exclude<KernelName, TiledKernel>, threads: number, u32s: number[], f32s: number[], buffers: Tensor[]): void {
    const groups = Math.max(1, Math.ceil(threads / K.WG));
    this.#dispatch(name, u32s, f32s, buffers, Math.min(groups, 65535), Math.ceil(groups / 65535));
  }

  matmul(a: Tensor, b: Tensor, c: Tensor, s: MatmulShape): void {
    const u32s = [s.M, s.N, s.K, s.sam, s.sak, s.sbk, s.sbn, s.accumulate ? 1 : 0];
    this.tiled('matmul', u32s, [s.alpha ?? 1], [a, b, c], s.M, s.N);
  }

  /** A 16 x 16 tiled kernel over an [M, N] output (kernels.ts tiledMatmul). */
  tiled(name: TiledKernel, u32s: number[], f32s: number[], buffers: Tensor[], M: number, N: number): void {
    this.#dispatch(name, u32s, f32s, buffers, Math.max(1, Math.ceil(N / K.TILE)), Math.max(1, Math.ceil(M / K.TILE)));
  }

  #dispatch(name: KernelName, u32s: number[], f32s: number[], buffers: Tensor[], x: number, y: number): void {
    const params = new ArrayBuffer(64);
    new Uint32Array(params, 0, 12).set(u32s);
    new Float32Array(params, 48, 4).set(f32s);
    const uniform = this.device.createBuffer({ size: 64, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST, label: 'webgrpo lora params' });
    this.device.queue.writeBuffer(uniform, 0, params);
    this.#temporaries.push(uniform);
    const pipeline = this.#byName[name];
    const bindGroup = this.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [uniform, ...buffers.map((t) => t.buffer)].map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    const pass = this.#encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(x, y);
    pass.end();
  }

  /**
   * Submits what is recorded and reads the tensors back (float32); frees the recording's
   * temporaries unless `keep` (a forward's activations wait for its backward).
   */
  async read(tensors: Tensor[], keep = false): Promise<Float32Array[]> {
    await this.ready;
    const total = tensors.reduce((n, t) => n + t.length, 0);
    const bytes = Math.max(16, total * 4);
    const staging = this.device.createBuffer({ size: bytes, usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST, label: 'webgrpo lora readback' });
    let at = 0;
    for (const t of tensors) {
      if (t.length > 0) this.#encoder.copyBufferToBuffer(t.buffer, 0, staging, at * 4, t.length * 4);
      at += t.length;
    }
    this.#submit();
    try {
      await staging.mapAsync(MapMode.READ, 0, bytes);
      const flat = new Float32Array(staging.getMappedRange(0, bytes).slice(0, total * 4));
      at = 0;
      return tensors.map((t) => flat.slice(at, (at += t.length)));
    } finally {
      staging.destroy();
      if (!keep) this.discard();
    }
  }

  /** Frees the recording's temporaries (after it ran, or for a pass dropped before its backward). */
  discard(): void {
    for (const buffer of this.#temporaries) this.#destroy(buffer);
    this.#temporaries = [];
  }
}
