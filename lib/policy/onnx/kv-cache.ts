/**
 * The key/value cache between decoder runs, and the two operations the samplers need on it:
 * gather rows (expanding a prefilled prompt to G rows is gather([0, 0, ..., 0]); dropping the rows
 * that finished is gather(stillRunning)), and merge caches of different prompts into one batch
 * (generateGroups, and requests joining a running batch), right-aligned so every row's newest
 * position is the last one; the leading positions of shorter rows are padding (`pads`), which
 * the decoder masks. Gathering drops leading positions that are padding in every kept row. On
 * WebGPU the blocks are copied buffer to buffer, so the cache never leaves the GPU.
 */
import type { OrtTensor, OrtTensorClass } from './ort-types.js';
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

/** One block copy, in elements, from sources[source] to the new cache; the same for every tensor. */
interface Copy {
  source: number;
  from: number;
  to: number;
  count: number;
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
    return { tensors, rows, length, ...withPads(pads) };
  }

  /** A new cache holding `rows` (indices into kv's rows, repeats allowed); kv itself is kept. */
  gather(kv: KvState, rows: readonly number[]): KvState {
    const { kvHeads, headDim } = this.layout;
    const drop = kv.pads ? Math.min(...rows.map((row) => kv.pads![row])) : 0;
    const length = kv.length - drop;
    const copies: Copy[] = [];
    rows.forEach((row, i) => {
      if (drop === 0) copies.push({ source: 0, from: row * kvHeads * kv.length * headDim, to: i * kvHeads * length * headDim, count: kvHeads * length * headDim });
      else for (let h = 0; h < kvHeads; h++) copies.push({ source: 0, from: ((row * kvHeads + h) * kv.length + drop) * headDim, to: (i * kvHeads + h) * length * headDim, count: length * headDim });
    });
    const pads = kv.pads?.length ? rows.map((row) => kv.pads![row] - drop) : undefined;
    return this.assemble([kv], copies, rows.length, length, pads);
  }

  /** One cache with the rows of all `states` in order, right-aligned to the longest; the states are kept. */
  merge(states: readonly KvState[]): KvState {
    const { kvHeads, headDim } = this.layout;
    const length = Math.max(...states.map((s) => s.length));
    const copies: Copy[] = [];
    const pads: number[] = [];
    let out = 0;
    states.forEach((state, source) => {
      const shift = length - state.length;
      for (let r = 0; r < state.rows; r++, out++) {
        pads.push((state.pads?.[r] ?? 0) + shift);
        if (state.length === 0) continue;
        for (let h = 0; h < kvHeads; h++) {
          copies.push({ source, from: (r * kvHeads + h) * state.length * headDim, to: ((out * kvHeads + h) * length + shift) * headDim, count: state.length * headDim });
        }
      }
    });
    return this.assemble(states, copies, out, length, pads);
  }

  dispose(kv: KvState): void {
    for (const tensor of Object.values(kv.tensors)) tensor.dispose();
  }

  /** A zero-filled cache of rows x length, with `copies` applied to each tensor. */
  protected abstract assemble(sources: readonly KvState[], copies: readonly Copy[], rows: number, length: number, pads: readonly number[] | undefined): KvState;

  protected dims(rows: number, length: number): number[] {
    return [rows, this.layout.kvHeads, length, this.layout.headDim];
  }
}

export class HostKv extends KvOps {
  protected assemble(sources: readonly KvState[], copies: readonly Copy[], rows: number, length: number, pads: readonly number[] | undefined): KvState {
    const size = rows * this.layout.kvHeads * length * this.layout.headDim;
    const tensors: Record<string, OrtTensor> = {};
    for (const name of this.layout.pastNames) {
      const data = this.layout.dtype === 'float16' ? new Uint16Array(size) : new Float32Array(size);
      // float16 as its bit patterns: browsers with Float16Array hand the data out as one, and
      // copying its values into a Uint16Array would convert them.
      const views = sources.map(({ tensors }) => {
        const d = tensors[name].data;
        return this.layout.dtype === 'float16' ? new Uint16Array(d.buffer, d.byteOffset, d.byteLength / 2) : (d as Float32Array);
      });
      for (const { source, from, to, count } of copies) data.set(views[source].subarray(from, from + count), to);
      tensors[name] = new this.Tensor(this.layout.dtype, data, this.dims(rows, length));
    }
    return { tensors, rows, length, ...withPads(pads) };
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

  protected assemble(sources: readonly KvState[], copies: readonly Copy[], rows: number, length: number, pads: readonly number[] | undefined): KvState {
    const bytes = this.layout.dtype === 'float16' ? 2 : 4;
    const size = rows * this.layout.kvHeads * length * this.layout.headDim * bytes;
    const encoder = this.device.createCommandEncoder({ label: 'webgrpo kv gather' });
    const tensors: Record<string, OrtTensor> = {};
    for (const name of this.layout.pastNames) {
      // New buffers are zero-filled, so padding needs no writes.
      const buffer = this.device.createBuffer({ size: Math.max(4, size), usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST, label: `webgrpo ${name}` });
      for (const { source, from, to, count } of copies) encoder.copyBufferToBuffer(sources[source].tensors[name].gpuBuffer, from * bytes, buffer, to * bytes, count * bytes);
      tensors[name] = this.Tensor.fromGpuBuffer(buffer, { dataType: this.layout.dtype, dims: this.dims(rows, length), dispose: () => buffer.destroy() });
    }
    this.device.queue.submit([encoder.finish()]);
    return { tensors, rows, length, ...withPads(pads) };
  }
}

/** Pads only when some row has any: a cache without padding feeds an all-ones mask. */
function withPads(pads: readonly number[] | undefined): { pads?: readonly number[] } {
  return pads?.some((p) => p > 0) ? { pads } : {};
}
