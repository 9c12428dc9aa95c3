/**
 * The adapter's forward, backward and AdamW update in WGSL (kernels.ts), on the WebGPU device
 * that holds the policy's logits: the frozen model's rows are gathered from its output buffers into
 * chunks of token states without a round trip, the adapter's weights are the buffers the policy's
 * sampler applies, and per step only the per-token statistics (16 bytes a token) and the gradient
 * norm are read back.
 */
import { UnsupportedError } from '../../errors.js';
import type { HeadAdapterWeights } from '../../policy/head-adapter.js';
import type { ScoreWindow } from '../../policy/onnx/score.js';
import type { GpuHeadAdapter } from '../../policy/onnx/webgpu-adapter.js';
import type { LogitsDtype } from '../../policy/onnx/webgpu-kernels.js';
import { BufferUsage, MapMode, type GpuBufferLike, type GpuComputePipelineLike, type GpuDeviceLike } from '../../policy/onnx/webgpu-types.js';
import type { AdapterShape } from '../adapter.js';
import type { AdapterState, HeadEngine, TokenStats } from '../engine.js';
import type { ResolvedOptimizer } from '../optimizer.js';
import { ADAMW_KERNEL, DINPUT_KERNEL, GRADA_KERNEL, GRADB_KERNEL, INPUT_KERNEL, MAX_RANK, STATS_KERNEL, SUMSQ_KERNEL, WG, gatherKernel } from './kernels.js';

/** Most tokens per chunk (per-token kernels dispatch one workgroup per token). */
const MAX_CHUNK_TOKENS = 4096;
const STORAGE = BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST;

interface Chunk {
  /** Tokens its buffers hold; `count` of them are in use. */
  capacity: number;
  count: number;
  z: GpuBufferLike;
  h: GpuBufferLike;
  targets: GpuBufferLike;
  u: GpuBufferLike;
  du: GpuBufferLike;
  stats: GpuBufferLike;
  norms: GpuBufferLike;
  coefs: GpuBufferLike;
  params: GpuBufferLike;
}

type Pipelines = Record<'input' | 'stats' | 'dinput' | 'gradb' | 'grada' | 'sumsq' | 'adamw', GpuComputePipelineLike>;

export class WebGpuEngine implements HeadEngine {
  readonly kind = 'gpu';
  readonly shape: AdapterShape;
  readonly #device: GpuDeviceLike;
  readonly #pipelines: Pipelines;
  readonly #gathers = new Map<string, GpuComputePipelineLike>();
  readonly #ready: Promise<void>;
  readonly #adapter: GpuHeadAdapter;
  readonly #m: { a: GpuBufferLike; b: GpuBufferLike };
  readonly #v: { a: GpuBufferLike; b: GpuBufferLike };
  readonly #grad: { a: GpuBufferLike; b: GpuBufferLike };
  readonly #scalar: GpuBufferLike;
  readonly #chunkTokens: number;
  #chunks: Chunk[] = [];
  #count = 0;
  #t = 0;
  /** The last forward's entropies, while its statistics on the GPU are current (the backward needs them). */
  #entropies?: Float64Array;

  constructor(device: GpuDeviceLike, initial: HeadAdapterWeights) {
    const { hiddenSize: d, vocabSize: v, rank: r, scale } = initial;
    if (r > MAX_RANK) throw new UnsupportedError(`The WebGPU engine takes ranks up to ${MAX_RANK}, got ${r}.`);
    this.shape = { hiddenSize: d, vocabSize: v, rank: r, scale };
    this.#device = device;
    this.#chunkTokens = Math.max(1, Math.min(MAX_CHUNK_TOKENS, Math.floor(device.limits.maxStorageBufferBindingSize / (4 * v))));
    if (r * v * 4 > device.limits.maxStorageBufferBindingSize) {
      throw new UnsupportedError(`B (${r} x ${v} floats) does not fit one WebGPU storage binding (${device.limits.maxStorageBufferBindingSize} bytes); lower the rank.`);
    }
    device.pushErrorScope('validation');
    const pipeline = (code: string, label: string) =>
      device.createComputePipeline({ label, layout: 'auto', compute: { module: device.createShaderModule({ code, label }), entryPoint: 'main' } });
    this.#pipelines = {
      input: pipeline(INPUT_KERNEL, 'webgrpo grad input'),
      stats: pipeline(STATS_KERNEL, 'webgrpo grad stats'),
      dinput: pipeline(DINPUT_KERNEL, 'webgrpo grad dinput'),
      gradb: pipeline(GRADB_KERNEL, 'webgrpo grad gradb'),
      grada: pipeline(GRADA_KERNEL, 'webgrpo grad grada'),
      sumsq: pipeline(SUMSQ_KERNEL, 'webgrpo grad sumsq'),
      adamw: pipeline(ADAMW_KERNEL, 'webgrpo grad adamw'),
    };
    this.#ready = device.popErrorScope().then((error) => {
      if (error) throw new UnsupportedError(`WebGPU rejected webgrpo's training kernels: ${error.message}`);
    });
    const buffer = (floats: number, label: string, data?: Float32Array) => {
      const b = device.createBuffer({ size: Math.max(16, floats * 4), usage: STORAGE, label });
      if (data) device.queue.writeBuffer(b, 0, data);
      return b;
    };
    this.#adapter = { kind: 'gpu', ...this.shape, a: buffer(d * r, 'webgrpo adapter A', initial.a), b: buffer(r * v, 'webgrpo adapter B', initial.b) };
    this.#m = { a: buffer(d * r, 'webgrpo adam m A', new Float32Array(d * r)), b: buffer(r * v, 'webgrpo adam m B', new Float32Array(r * v)) };
    this.#v = { a: buffer(d * r, 'webgrpo adam v A', new Float32Array(d * r)), b: buffer(r * v, 'webgrpo adam v B', new Float32Array(r * v)) };
    this.#grad = { a: buffer(d * r, 'webgrpo grad A'), b: buffer(r * v, 'webgrpo grad B') };
    this.#scalar = buffer(4, 'webgrpo grad norm');
  }

  resetStates(count: number): void {
    this.#count = count;
    this.#entropies = undefined;
    if (count === 0) this.#freeChunks();
    const needed = Math.ceil(count / this.#chunkTokens);
    const { hiddenSize: d, vocabSize: v, rank: r } = this.shape;
    for (let i = 0; i < needed; i++) {
      const want = Math.min(this.#chunkTokens, count - i * this.#chunkTokens);
      const old = this.#chunks[i];
      if (old && old.capacity >= want) continue;
      if (old) this.#destroyChunk(old);
      // Room rounded up to 64 tokens, so slightly larger batches reuse the buffers.
      const c = Math.min(this.#chunkTokens, Math.ceil(want / 64) * 64);
      const device = this.#device;
      const make = (bytes: number, label: string) => device.createBuffer({ size: Math.max(16, bytes), usage: STORAGE, label: `webgrpo ${label}` });
      this.#chunks[i] = {
        capacity: c,
        count: 0,
        z: make(c * v * 4, 'states z'),
        h: make(c * d * 4, 'states h'),
        targets: make(c * 4, 'targets'),
        u: make(c * r * 4, 'u'),
        du: make(c * r * 4, 'du'),
        stats: make(c * 16, 'token stats'),
        norms: make(c * 16, 'token norms'),
        coefs: make(c * 16, 'token coefs'),
        params: device.createBuffer({ size: 32, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST, label: 'webgrpo chunk params' }),
      };
    }
    this.#chunks.forEach((chunk, i) => (chunk.count = Math.max(0, Math.min(this.#chunkTokens, count - i * this.#chunkTokens))));
  }

  async writeWindow(window: ScoreWindow, slots: ArrayLike<number>): Promise<void> {
    await this.#ready;
    const { logits, hidden } = window;
    if (!hidden) throw new UnsupportedError('The model window has no hidden state; load the policy with hiddenState: true.');
    const logitsType: LogitsDtype = logits.type === 'float16' ? 'float16' : 'float32';
    const hiddenType: LogitsDtype = hidden.type === 'float16' ? 'float16' : 'float32';
    const key = `${logitsType}/${hiddenType}`;
    let pipeline = this.#gathers.get(key);
    if (!pipeline) {
      const code = gatherKernel(logitsType, hiddenType);
      pipeline = this.#device.createComputePipeline({ label: 'webgrpo gather', layout: 'auto', compute: { module: this.#device.createShaderModule({ code, label: 'webgrpo gather' }), entryPoint: 'main' } });
      this.#gathers.set(key, pipeline);
    }
    const { vocabSize: v, hiddenSize: d } = this.shape;
    const byChunk = new Map<number, number[]>();
    window.picks.forEach(({ offset }, k) => {
      const slot = slots[k];
      const chunk = Math.floor(slot / this.#chunkTokens);
      const items = byChunk.get(chunk) ?? [];
      items.push(offset, (offset / v) * d, slot - chunk * this.#chunkTokens, 0);
      byChunk.set(chunk, items);
    });
    const encoder = this.#device.createCommandEncoder({ label: 'webgrpo gather' });
    const temporaries: GpuBufferLike[] = [];
    for (const [index, items] of byChunk) {
      const chunk = this.#chunks[index];
      const data = Uint32Array.from(items);
      const itemBuffer = this.#device.createBuffer({ size: data.byteLength, usage: BufferUsage.STORAGE | BufferUsage.COPY_DST, label: 'webgrpo gather items' });
      const params = this.#device.createBuffer({ size: 32, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST, label: 'webgrpo gather params' });
      temporaries.push(itemBuffer, params);
      this.#device.queue.writeBuffer(itemBuffer, 0, data);
      this.#device.queue.writeBuffer(params, 0, this.#params(data.length / 4, 1));
      this.#dispatch(encoder, pipeline, [params, logits.gpuBuffer, hidden.gpuBuffer, itemBuffer, chunk.z, chunk.h], data.length / 4, true);
    }
    this.#device.queue.submit([encoder.finish()]);
    this.#entropies = undefined;
    for (const buffer of temporaries) buffer.destroy();
  }

  async writeStates(z: Float32Array, h: Float32Array): Promise<void> {
    await this.#ready;
    const { vocabSize: v, hiddenSize: d } = this.shape;
    this.resetStates(h.length / d);
    this.#chunks.forEach((chunk, i) => {
      if (chunk.count === 0) return;
      const first = i * this.#chunkTokens;
      this.#device.queue.writeBuffer(chunk.z, 0, z.subarray(first * v, (first + chunk.count) * v));
      this.#device.queue.writeBuffer(chunk.h, 0, h.subarray(first * d, (first + chunk.count) * d));
    });
  }

  async forward(targets: Int32Array, temperature: number): Promise<TokenStats> {
    await this.#ready;
    const live = this.#live();
    const encoder = this.#device.createCommandEncoder({ label: 'webgrpo grad forward' });
    live.forEach((chunk, i) => {
      const first = i * this.#chunkTokens;
      this.#device.queue.writeBuffer(chunk.targets, 0, Uint32Array.from(targets.subarray(first, first + chunk.count)));
      this.#device.queue.writeBuffer(chunk.params, 0, this.#params(chunk.count, temperature));
      this.#dispatch(encoder, this.#pipelines.input, [chunk.params, chunk.h, this.#adapter.a, chunk.u], Math.ceil((chunk.count * this.shape.rank) / WG), true);
      this.#dispatch(encoder, this.#pipelines.stats, [chunk.params, chunk.z, chunk.u, this.#adapter.b, chunk.targets, chunk.stats, chunk.norms], chunk.count, true);
    });
    const stats = await this.#readBack(encoder, live.map((chunk) => ({ buffer: chunk.stats, bytes: chunk.count * 16 })));
    const n = this.#count;
    const out: TokenStats = { logps: new Float64Array(n), entropies: new Float64Array(n), refLogps: new Float64Array(n) };
    for (let t = 0; t < n; t++) {
      out.logps[t] = stats[4 * t];
      out.entropies[t] = stats[4 * t + 1];
      out.refLogps[t] = stats[4 * t + 2];
    }
    this.#entropies = out.entropies;
    return out;
  }

  async backward(targets: Int32Array, dLogp: Float64Array, dEntropy: Float64Array, temperature: number): Promise<number> {
    // The kernels read the forward's per-token maxima and normalisers: they must be the current weights'.
    const entropies = this.#entropies ?? (await this.forward(targets, temperature)).entropies;
    const { hiddenSize: d, vocabSize: v, rank: r } = this.shape;
    const live = this.#live();
    const encoder = this.#device.createCommandEncoder({ label: 'webgrpo grad backward' }) as ReturnType<GpuDeviceLike['createCommandEncoder']> & {
      clearBuffer(buffer: GpuBufferLike): void;
    };
    encoder.clearBuffer(this.#grad.a);
    encoder.clearBuffer(this.#grad.b);
    live.forEach((chunk, i) => {
      const first = i * this.#chunkTokens;
      const coefs = new Float32Array(chunk.count * 4);
      for (let t = 0; t < chunk.count; t++) coefs.set([dLogp[first + t], dEntropy[first + t], entropies[first + t], 0], 4 * t);
      this.#device.queue.writeBuffer(chunk.coefs, 0, coefs);
      this.#device.queue.writeBuffer(chunk.params, 0, this.#params(chunk.count, temperature));
      const common = [chunk.params, chunk.z, chunk.u, this.#adapter.b, chunk.targets, chunk.norms, chunk.coefs];
      this.#dispatch(encoder, this.#pipelines.dinput, [...common, chunk.du], chunk.count, true);
      this.#dispatch(encoder, this.#pipelines.gradb, [...common, this.#grad.b], Math.ceil(v / WG), true);
      this.#dispatch(encoder, this.#pipelines.grada, [chunk.params, chunk.h, chunk.du, this.#grad.a], Math.ceil((d * r) / WG), true);
    });
    const sums = this.#device.createBuffer({ size: 32, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST, label: 'webgrpo sumsq params' });
    this.#device.queue.writeBuffer(sums, 0, this.#params(0, 1, r * v));
    this.#dispatch(encoder, this.#pipelines.sumsq, [sums, this.#grad.a, this.#grad.b, this.#scalar], 1, false);
    const [squares] = await this.#readBack(encoder, [{ buffer: this.#scalar, bytes: 4 }]);
    sums.destroy();
    return Math.sqrt(squares);
  }

  async gradients(): Promise<{ a: Float32Array; b: Float32Array }> {
    const [a, b] = await this.#readArrays([this.#grad.a, this.#grad.b]);
    return { a, b };
  }


  async step(o: ResolvedOptimizer, clip: number): Promise<void> {
    await this.#ready;
    this.#t += 1;
    this.#entropies = undefined;
    const encoder = this.#device.createCommandEncoder({ label: 'webgrpo adamw' });
    const { hiddenSize: d, vocabSize: v, rank: r } = this.shape;
    const run = (p: GpuBufferLike, g: GpuBufferLike, m: GpuBufferLike, vv: GpuBufferLike, count: number) => {
      const params = new ArrayBuffer(48);
      new Uint32Array(params, 0, 1)[0] = count;
      new Float32Array(params, 4, 8).set([o.lr, o.beta1, o.beta2, o.eps, 1 - o.lr * o.weightDecay, 1 - o.beta1 ** this.#t, 1 - o.beta2 ** this.#t, clip]);
      const buffer = this.#device.createBuffer({ size: 48, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST, label: 'webgrpo adam params' });
      this.#device.queue.writeBuffer(buffer, 0, params);
      this.#dispatch(encoder, this.#pipelines.adamw, [buffer, p, g, m, vv], Math.ceil(count / WG), true);
      return buffer;
    };
    const buffers = [run(this.#adapter.a, this.#grad.a, this.#m.a, this.#v.a, d * r), run(this.#adapter.b, this.#grad.b, this.#m.b, this.#v.b, r * v)];
    this.#device.queue.submit([encoder.finish()]);
    for (const buffer of buffers) buffer.destroy();
  }

  get updates(): number {
    return this.#t;
  }

  binding(): GpuHeadAdapter {
    return this.#adapter;
  }

  async read(): Promise<AdapterState> {
    const [a, b, ma, mb, va, vb] = await this.#readArrays([this.#adapter.a, this.#adapter.b, this.#m.a, this.#m.b, this.#v.a, this.#v.b]);
    return { a, b, m: { a: ma, b: mb }, v: { a: va, b: vb }, updates: this.#t };
  }

  load(state: AdapterState): void {
    const q = this.#device.queue;
    q.writeBuffer(this.#adapter.a, 0, state.a);
    q.writeBuffer(this.#adapter.b, 0, state.b);
    q.writeBuffer(this.#m.a, 0, state.m.a);
    q.writeBuffer(this.#m.b, 0, state.m.b);
    q.writeBuffer(this.#v.a, 0, state.v.a);
    q.writeBuffer(this.#v.b, 0, state.v.b);
    this.#t = state.updates;
    this.#entropies = undefined;
  }

  dispose(): void {
    this.#freeChunks();
    for (const buffer of [this.#adapter.a, this.#adapter.b, this.#m.a, this.#m.b, this.#v.a, this.#v.b, this.#grad.a, this.#grad.b, this.#scalar]) buffer.destroy();
  }

  #freeChunks(): void {
    for (const chunk of this.#chunks) this.#destroyChunk(chunk);
    this.#chunks = [];
  }

  #destroyChunk(chunk: Chunk): void {
    for (const buffer of [chunk.z, chunk.h, chunk.targets, chunk.u, chunk.du, chunk.stats, chunk.norms, chunk.coefs, chunk.params]) buffer.destroy();
  }

  #live(): Chunk[] {
    return this.#chunks.filter((chunk) => chunk.count > 0);
  }

  #params(count: number, temperature: number, extra = 0): ArrayBuffer {
    const { vocabSize: v, hiddenSize: d, rank: r, scale } = this.shape;
    const params = new ArrayBuffer(32);
    new Uint32Array(params, 0, 4).set([v, d, r, count]);
    new Float32Array(params, 16, 2).set([1 / temperature, scale]);
    new Uint32Array(params, 24, 2).set([extra, 0]);
    return params;
  }

  #dispatch(encoder: ReturnType<GpuDeviceLike['createCommandEncoder']>, pipeline: GpuComputePipelineLike, buffers: GpuBufferLike[], groups: number, split: boolean): void {
    const bindGroup = this.#device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    if (split) pass.dispatchWorkgroups(Math.min(Math.max(groups, 1), 65535), Math.max(1, Math.ceil(groups / 65535)));
    else pass.dispatchWorkgroups(1);
    pass.end();
  }

  /** Submits `encoder` with copies of the ranges into one staging buffer, and maps it. */
  async #readBack(encoder: ReturnType<GpuDeviceLike['createCommandEncoder']>, ranges: Array<{ buffer: GpuBufferLike; bytes: number }>): Promise<Float32Array> {
    const total = ranges.reduce((n, r) => n + r.bytes, 0);
    const staging = this.#device.createBuffer({ size: Math.max(16, total), usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST, label: 'webgrpo grad readback' });
    let at = 0;
    for (const { buffer, bytes } of ranges) {
      if (bytes > 0) encoder.copyBufferToBuffer(buffer, 0, staging, at, bytes);
      at += bytes;
    }
    this.#device.queue.submit([encoder.finish()]);
    try {
      await staging.mapAsync(MapMode.READ, 0, Math.max(16, total));
      return new Float32Array(staging.getMappedRange(0, Math.max(16, total)).slice(0, total));
    } finally {
      staging.destroy();
    }
  }

  /** Host copies of (A-shaped, B-shaped) pairs of buffers. */
  async #readArrays(buffers: GpuBufferLike[]): Promise<Float32Array[]> {
    await this.#ready;
    const { hiddenSize: d, vocabSize: v, rank: r } = this.shape;
    const floats = buffers.map((_, i) => (i % 2 === 0 ? d * r : r * v));
    const ranges = buffers.map((buffer, i) => ({ buffer, bytes: floats[i] * 4 }));
    const flat = await this.#readBack(this.#device.createCommandEncoder({ label: 'webgrpo grad read' }), ranges);
    let at = 0;
    return floats.map((n) => flat.slice(at, (at += n)));
  }
}
