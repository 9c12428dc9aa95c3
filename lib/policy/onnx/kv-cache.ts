/**
 * The key/value cache between decoder runs, and the one operation the group sampler needs on it:
 * gather rows. Expanding a prefilled prompt to G rows is gather([0, 0, ..., 0]); dropping the rows
 * that finished is gather(stillRunning). On WebGPU the rows are copied buffer to buffer, so the
 * cache never leaves the GPU.
 */
import type { OrtTensor, OrtTensorClass } from './runtime.js';
import { BufferUsage, type GpuDeviceLike } from './webgpu-types.js';

export interface KvLayout {
  /** `past_key_values.*` input names, each fed from the output `present.*` of the same suffix. */
  pastNames: readonly string[];
  presentNames: readonly string[];
  dtype: 'float32' | 'float16';
  kvHeads: number;
  headDim: number;
}

/** Cache tensors keyed by past input name, all [rows, kvHeads, length, headDim]. */
export interface KvState {
  tensors: Record<string, OrtTensor>;
  rows: number;
  length: number;
  /** Per row, how many leading positions are padding (rows of different prompts, right-aligned); absent: none. */
  pads?: readonly number[];
}

export abstract class KvOps {
  constructor(
    protected readonly Tensor: OrtTensorClass,
    readonly layout: KvLayout,
  ) {}

  /** A zero-length cache for `rows` rows (the first run of a decoder with past inputs). */
  empty(rows: number): KvState {
    const { dtype, kvHeads, headDim } = this.layout;
    const data = dtype === 'float16' ? new Uint16Array(0) : new Float32Array(0);
    const tensors: Record<string, OrtTensor> = {};
    for (const name of this.layout.pastNames) tensors[name] = new this.Tensor(dtype, data, [rows, kvHeads, 0, headDim]);
    return { tensors, rows, length: 0 };
  }

  /** The cache that a run's `present.*` outputs form, to feed as the next run's past. */
  fromOutputs(outputs: Record<string, OrtTensor>, rows: number, length: number, pads?: readonly number[]): KvState {
    const tensors: Record<string, OrtTensor> = {};
    this.layout.pastNames.forEach((name, i) => (tensors[name] = outputs[this.layout.presentNames[i]]));
    return { tensors, rows, length, ...(pads ? { pads } : {}) };
  }

  /** A new cache holding `rows` (indices into kv's rows, repeats allowed); kv itself is kept. */
  abstract gather(kv: KvState, rows: readonly number[]): KvState;

  dispose(kv: KvState): void {
    for (const tensor of Object.values(kv.tensors)) tensor.dispose();
  }

  protected dims(kv: KvState, rows: number): number[] {
    return [rows, this.layout.kvHeads, kv.length, this.layout.headDim];
  }
}

export class HostKv extends KvOps {
  gather(kv: KvState, rows: readonly number[]): KvState {
    const rowSize = this.layout.kvHeads * kv.length * this.layout.headDim;
    const tensors: Record<string, OrtTensor> = {};
    for (const [name, tensor] of Object.entries(kv.tensors)) {
      const source = tensor.data as Float32Array | Uint16Array;
      const data = new (source.constructor as Float32ArrayConstructor | Uint16ArrayConstructor)(rows.length * rowSize);
      rows.forEach((row, i) => data.set(source.subarray(row * rowSize, (row + 1) * rowSize), i * rowSize));
      tensors[name] = new this.Tensor(this.layout.dtype, data, this.dims(kv, rows.length));
    }
    return { tensors, rows: rows.length, length: kv.length, ...gatheredPads(kv, rows) };
  }
}

export class GpuKv extends KvOps {
  constructor(
    Tensor: OrtTensorClass,
    layout: KvLayout,
    private readonly device: GpuDeviceLike,
  ) {
    super(Tensor, layout);
  }

  gather(kv: KvState, rows: readonly number[]): KvState {
    const elementBytes = this.layout.dtype === 'float16' ? 2 : 4;
    const rowBytes = this.layout.kvHeads * kv.length * this.layout.headDim * elementBytes;
    const encoder = this.device.createCommandEncoder({ label: 'webgrpo kv gather' });
    const tensors: Record<string, OrtTensor> = {};
    for (const [name, tensor] of Object.entries(kv.tensors)) {
      const buffer = this.device.createBuffer({
        size: Math.max(4, rows.length * rowBytes),
        usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST,
        label: `webgrpo ${name}`,
      });
      rows.forEach((row, i) => encoder.copyBufferToBuffer(tensor.gpuBuffer, row * rowBytes, buffer, i * rowBytes, rowBytes));
      tensors[name] = this.Tensor.fromGpuBuffer(buffer, {
        dataType: this.layout.dtype,
        dims: this.dims(kv, rows.length),
        dispose: () => buffer.destroy(),
      });
    }
    this.device.queue.submit([encoder.finish()]);
    return { tensors, rows: rows.length, length: kv.length, ...gatheredPads(kv, rows) };
  }
}

function gatheredPads(kv: KvState, rows: readonly number[]): { pads?: number[] } {
  const { pads } = kv;
  return pads ? { pads: rows.map((row) => pads[row]) } : {};
}
