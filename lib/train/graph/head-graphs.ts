/**
 * The LM-head adapter's kernels on onnxruntime, what the head engine (head-engine.ts) runs on. The
 * frozen model is run once per generation batch; its per-token states (base logits z, V values,
 * and hidden state h, d values, of every position that predicts a completion token) are kept
 * here, on the host (a WebGPU policy's windows are read back), and every optimisation iteration
 * works on them:
 *
 *   forward:   z' = z + s (h A) B;  log p'(y) and H' of softmax(z'/T), and log p(y) of softmax(z/T)
 *   backward:  from d loss / d log p'(y) and d loss / d H' per token to dA, dB
 *   step:      gradient-norm clipping and AdamW
 *
 * The head graphs of head-graph.ts run in two sessions of the onnxruntime the policy runs on (on
 * its backend: Node CPU, WASM or WebGPU), made on the first forward; A and B are fed on every
 * call. The sampler reads the same arrays (`binding`), which AdamW updates in place; beside a
 * WebGPU policy it reads GPU copies of them, written after every update.
 */
import { UnsupportedError } from '../../errors.js';
import type { AdapterShape } from '../head/adapter.js';
import type { AdapterState } from '../head/state.js';
import { adamwUpdate, type ResolvedOptimizer } from '../optimizer.js';
import type { HeadAdapterWeights } from '../../policy/head-adapter.js';
import { halfToFloat } from '../../policy/logits.js';
import type { ScoreWindow } from '../../policy/onnx/score.js';
import type { GpuHeadAdapter, HostHeadAdapter } from '../../policy/onnx/webgpu-adapter.js';
import { BufferUsage, MapMode, type GpuDeviceLike } from '../../policy/onnx/webgpu-types.js';
import { HEAD_IO } from './head-io.js';
import type { GraphRuntime, GraphTensor } from './runtime.js';
import { backwardFeeds, openSessionPair, releaseSessionPair, type SessionPair } from './session-pair.js';

/** Per token, in slot order. */
export interface TokenStats {
  /** log p'(y) under the adapted model (softmax(z'/T)). */
  logps: Float64Array;
  /** Entropy of softmax(z'/T). */
  entropies: Float64Array;
  /** log p(y) under the base model (softmax(z/T)): the reference. */
  refLogps: Float64Array;
}

export class HeadGraphs {
  readonly kind: 'host' | 'gpu';
  readonly shape: AdapterShape;
  private readonly weights: HostHeadAdapter;
  /** Beside a WebGPU policy: the copies of A and B its sampler applies to the logits on the device. */
  private readonly gpu?: GpuHeadAdapter;
  private readonly m: { a: Float32Array; b: Float32Array };
  private readonly v: { a: Float32Array; b: Float32Array };
  private grad?: { a: Float32Array; b: Float32Array };
  private t = 0;
  private z = new Float32Array(0);
  private h = new Float32Array(0);
  private count = 0;
  private sessions?: Promise<SessionPair>;
  /** The last forward, kept for a backward at the same temperature until the states or the adapter change. */
  private kept?: { temperature: number; targets: Int32Array; feeds: Record<string, GraphTensor>; out: Record<string, GraphTensor> };

  constructor(
    initial: HeadAdapterWeights,
    private readonly loadRuntime: () => Promise<GraphRuntime>,
    private readonly sessionOptions: Record<string, unknown> = {},
    /** The WebGPU device a policy's logits live on; undefined for host memory (CPU, WASM). */
    private readonly device?: GpuDeviceLike,
  ) {
    const { hiddenSize: d, vocabSize: v, rank: r, scale } = initial;
    this.shape = { hiddenSize: d, vocabSize: v, rank: r, scale };
    this.kind = device ? 'gpu' : 'host';
    this.weights = { kind: 'host', ...this.shape, a: Float32Array.from(initial.a), b: Float32Array.from(initial.b) };
    this.m = { a: new Float32Array(d * r), b: new Float32Array(r * v) };
    this.v = { a: new Float32Array(d * r), b: new Float32Array(r * v) };
    if (device) {
      const buffer = (floats: number, label: string) => device.createBuffer({ size: Math.max(16, floats * 4), usage: BufferUsage.STORAGE | BufferUsage.COPY_DST, label });
      this.gpu = { kind: 'gpu', ...this.shape, a: buffer(d * r, 'webgrpo adapter A'), b: buffer(r * v, 'webgrpo adapter B') };
      this.upload();
    }
  }

  /** Room for `count` token states; the previous ones are dropped. */
  resetStates(count: number): void {
    const { vocabSize: v, hiddenSize: d } = this.shape;
    this.kept = undefined;
    this.count = count;
    if (count === 0) {
      this.z = new Float32Array(0);
      this.h = new Float32Array(0);
    }
    if (this.z.length < count * v) this.z = new Float32Array(count * v);
    if (this.h.length < count * d) this.h = new Float32Array(count * d);
  }

  /** Copies the picked rows of a model window into token slots `slots[k]` (one per pick). */
  async writeWindow(window: ScoreWindow, slots: ArrayLike<number>): Promise<void> {
    const { vocabSize: v, hiddenSize: d } = this.shape;
    if (!window.hidden) throw new UnsupportedError('The model window has no hidden state; load the policy with hiddenState: true.');
    this.kept = undefined;
    const logits = await this.hostData(window.logits);
    const hidden = await this.hostData(window.hidden);
    window.picks.forEach(({ offset }, k) => {
      this.z.set(rowOf(logits, offset, v), slots[k] * v);
      this.h.set(rowOf(hidden, (offset / v) * d, d), slots[k] * d);
    });
  }

  /** Token states given directly: z as count x V, h as count x d (tests, or a model run elsewhere). */
  async writeStates(z: Float32Array, h: Float32Array): Promise<void> {
    this.resetStates(h.length / this.shape.hiddenSize);
    this.z.set(z);
    this.h.set(h);
  }

  async forward(targets: Int32Array, temperature: number): Promise<TokenStats> {
    const { runtime, forward } = await this.open();
    const { vocabSize: v, hiddenSize: d, rank: r } = this.shape;
    const n = this.count;
    const floats = (data: Float32Array, dims: number[]) => new runtime.Tensor('float32', data, dims);
    const feeds: Record<string, GraphTensor> = {
      [HEAD_IO.logits]: floats(this.z.subarray(0, n * v), [n, v]),
      [HEAD_IO.hidden]: floats(this.h.subarray(0, n * d), [n, d]),
      [HEAD_IO.targets]: new runtime.Tensor('int64', BigInt64Array.from(targets.subarray(0, n), BigInt), [n]),
      [HEAD_IO.a]: floats(this.weights.a, [d, r]),
      [HEAD_IO.b]: floats(this.weights.b, [r, v]),
      [HEAD_IO.invTemperature]: floats(Float32Array.of(1 / temperature), []),
    };
    const out = await forward.run(feeds);
    this.kept = { temperature, targets, feeds, out };
    const read = (name: string) => Float64Array.from(out[name].data as ArrayLike<number>);
    return { logps: read(HEAD_IO.logps), entropies: read(HEAD_IO.entropies), refLogps: read(HEAD_IO.refLogps) };
  }

  /**
   * Sets dA, dB (replacing earlier ones) from per-token d loss / d log p'(y) and d loss / d H';
   * returns the global gradient norm.
   */
  async backward(targets: Int32Array, dLogp: Float64Array, dEntropy: Float64Array, temperature: number): Promise<number> {
    if (this.kept?.temperature !== temperature || this.kept.targets !== targets) await this.forward(targets, temperature);
    const kept = this.kept!;
    const pair = await this.open();
    const { runtime, backward } = pair;
    const n = this.count;
    const feeds = backwardFeeds(pair, kept);
    feeds[HEAD_IO.dlogps] = new runtime.Tensor('float32', Float32Array.from(dLogp.subarray(0, n)), [n]);
    feeds[HEAD_IO.dentropies] = new runtime.Tensor('float32', Float32Array.from(dEntropy.subarray(0, n)), [n]);
    const out = await backward.run(feeds);
    this.grad = { a: Float32Array.from(out[HEAD_IO.gradA].data as ArrayLike<number>), b: Float32Array.from(out[HEAD_IO.gradB].data as ArrayLike<number>) };
    let squares = 0;
    for (const x of this.grad.a) squares += x * x;
    for (const x of this.grad.b) squares += x * x;
    return Math.sqrt(squares);
  }

  /** Host copies of the last gradients (tests). */
  async gradients(): Promise<{ a: Float32Array; b: Float32Array }> {
    const { hiddenSize: d, vocabSize: v, rank: r } = this.shape;
    return { a: this.grad?.a.slice() ?? new Float32Array(d * r), b: this.grad?.b.slice() ?? new Float32Array(r * v) };
  }

  /** Clips the gradients by `clip` (the clip_grad_norm_ factor) and applies one AdamW update. */
  async step(optimizer: ResolvedOptimizer, clip: number): Promise<void> {
    const { hiddenSize: d, vocabSize: v, rank: r } = this.shape;
    const grad = this.grad ?? { a: new Float32Array(d * r), b: new Float32Array(r * v) };
    this.kept = undefined;
    this.t += 1;
    adamwUpdate(this.weights.a, grad.a, this.m.a, this.v.a, this.t, clip, optimizer);
    adamwUpdate(this.weights.b, grad.b, this.m.b, this.v.b, this.t, clip, optimizer);
    this.upload();
  }

  /** AdamW updates applied so far (restored by `load`). */
  get updates(): number {
    return this.t;
  }

  /** The adapter in the form the policy applies (beside a WebGPU policy, its live buffers). */
  binding(): HostHeadAdapter | GpuHeadAdapter {
    return this.gpu ?? this.weights;
  }

  async read(): Promise<AdapterState> {
    const copy = (x: { a: Float32Array; b: Float32Array }) => ({ a: x.a.slice(), b: x.b.slice() });
    return { a: this.weights.a.slice(), b: this.weights.b.slice(), m: copy(this.m), v: copy(this.v), updates: this.t };
  }

  load(state: AdapterState): void {
    this.kept = undefined;
    this.weights.a.set(state.a);
    this.weights.b.set(state.b);
    this.m.a.set(state.m.a);
    this.m.b.set(state.m.b);
    this.v.a.set(state.v.a);
    this.v.b.set(state.v.b);
    this.t = state.updates;
    this.upload();
  }

  dispose(): void {
    this.resetStates(0);
    this.gpu?.a.destroy();
    this.gpu?.b.destroy();
    const sessions = this.sessions;
    this.sessions = undefined;
    void sessions?.then(releaseSessionPair).catch(() => undefined);
  }

  /**
   * A window's tensor with its values in host memory. A WebGPU policy's are copied out of their
   * buffers here (not through the tensor's own download, which would turn the policy's reusable
   * output tensors into host ones).
   */
  private async hostData(tensor: ScoreWindow['logits']): Promise<HostData> {
    if (tensor.location !== 'gpu-buffer') return { type: tensor.type, data: tensor.data };
    const device = this.device;
    if (!device) throw new UnsupportedError('The model window is on a GPU, but this engine was made for a policy on the host; make it with the policy\'s device.');
    const count = tensor.dims.reduce((n, d) => n * d, 1);
    const bytes = Math.ceil((count * (tensor.type === 'float16' ? 2 : 4)) / 4) * 4;
    const staging = device.createBuffer({ size: bytes, usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST, label: 'webgrpo head states' });
    try {
      const encoder = device.createCommandEncoder();
      encoder.copyBufferToBuffer(tensor.gpuBuffer, 0, staging, 0, bytes);
      device.queue.submit([encoder.finish()]);
      await staging.mapAsync(MapMode.READ, 0, bytes);
      const data = new Uint8Array(staging.getMappedRange(0, bytes).slice(0));
      staging.unmap();
      return { type: tensor.type, data };
    } finally {
      staging.destroy();
    }
  }

  /** Writes A and B into the sampler's GPU copies (queued before any later sampling on the device). */
  private upload(): void {
    if (!this.gpu || !this.device) return;
    this.device.queue.writeBuffer(this.gpu.a, 0, this.weights.a);
    this.device.queue.writeBuffer(this.gpu.b, 0, this.weights.b);
  }

  private open(): Promise<SessionPair> {
    this.sessions ??= (async () => {
      const runtime = await this.loadRuntime();
      // Loaded here, on first use: the graph writer (and its ONNX protobuf code) stays out of a
      // page's first bundle, which needs the adapter's format but not its training.
      const { buildHeadGraphs } = await import('./head-graph.js');
      return openSessionPair(runtime, buildHeadGraphs(this.shape), this.sessionOptions);
    })();
    return this.sessions;
  }
}

interface HostData {
  type: string;
  data: { buffer: ArrayBufferLike; byteOffset: number; byteLength: number };
}

/** One row of a float32 or float16 host tensor as float32. */
function rowOf(tensor: HostData, offset: number, length: number): Float32Array {
  const { data } = tensor;
  if (tensor.type === 'float16') return halfToFloat(new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2), offset, length);
  return new Float32Array(data.buffer, data.byteOffset, data.byteLength / 4).subarray(offset, offset + length);
}
