/**
 * Logits that stay on the GPU. The decoder writes them into a buffer owned here (IO binding: a
 * pre-allocated `gpu-buffer` output), the kernels of webgpu-kernels.ts reduce each needed row to
 * 16 bytes, and only those bytes are mapped back. All buffers are reused from call to call and
 * destroyed with the policy, so GPU memory does not grow with the number of calls.
 */
import { UnsupportedError } from '../../errors.js';
import type { TokenScore } from '../logits.js';
import type { TopLogprob } from '../../core/policy.js';
import type { SampledToken, SamplingConfig } from '../sampling.js';
import { newStats, type LogitsOps, type SamplePick, type ScorePick } from './logits-ops.js';
import type { OrtTensor, OrtTensorClass } from './ort-types.js';
import { GpuAdapterApplier, type GpuHeadAdapter } from './webgpu-adapter.js';
import { sampleKernel, scoreKernel, topKernel, type LogitsDtype } from './webgpu-kernels.js';
import { BufferUsage, MapMode, type GpuBufferLike, type GpuComputePipelineLike, type GpuDeviceLike } from './webgpu-types.js';

const RESULT_BYTES = 16;
/** The kernels' uniform block (webgpu-kernels.ts Params). */
const PARAMS_BYTES = 48;
const MAX_DISPATCH = 65535;

export class WebGpuLogits implements LogitsOps {
  readonly stats = newStats();
  #adapter: GpuHeadAdapter | undefined;
  private readonly params: GpuBufferLike;
  private applier?: GpuAdapterApplier;
  /** Rows of the current logits buffer the adapter was applied to (in place, so once each). */
  private readonly adaptedRows = new Set<number>();
  private logits?: GpuBufferLike;
  private items?: GpuBufferLike;
  private results?: GpuBufferLike;
  private tops?: GpuBufferLike;
  private staging?: GpuBufferLike;
  /** The rows' allowed-token bitsets (constrained decoding), one bit per token. */
  private masks?: GpuBufferLike;
  private readonly elementBytes: number;

  /**
   * `Tensor` must be the class onnxruntime-web itself uses: it recognizes pre-allocated outputs
   * with `instanceof`.
   */
  static async create(device: GpuDeviceLike, Tensor: OrtTensorClass, vocabSize: number, dtype: LogitsDtype): Promise<WebGpuLogits> {
    device.pushErrorScope('validation');
    const pipeline = (code: string, label: string) =>
      device.createComputePipeline({
        label,
        layout: 'auto',
        compute: { module: device.createShaderModule({ code, label }), entryPoint: 'main' },
      });
    const pipelines = {
      sample: pipeline(sampleKernel(dtype), 'webgrpo sample'),
      score: pipeline(scoreKernel(dtype), 'webgrpo score'),
      top: pipeline(topKernel(dtype), 'webgrpo top'),
    };
    const error = await device.popErrorScope();
    if (error) throw new Error(`WebGPU rejected webgrpo's sampling kernels: ${error.message}`);
    return new WebGpuLogits(device, Tensor, vocabSize, dtype, pipelines);
  }

  private constructor(
    private readonly device: GpuDeviceLike,
    private readonly Tensor: OrtTensorClass,
    private readonly vocabSize: number,
    private readonly dtype: LogitsDtype,
    private readonly pipelines: Record<Kind, GpuComputePipelineLike>,
  ) {
    this.elementBytes = dtype === 'float16' ? 2 : 4;
    this.params = device.createBuffer({ size: PARAMS_BYTES, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST, label: 'webgrpo params' });
  }

  get adapter(): GpuHeadAdapter | undefined {
    return this.#adapter;
  }

  set adapter(adapter: GpuHeadAdapter | undefined) {
    // The in-place update writes float16 logits two at a time, within one row.
    if (adapter && this.dtype === 'float16' && this.vocabSize % 2 === 1) {
      throw new UnsupportedError(`An adapter on float16 logits needs an even vocabulary; this model has ${this.vocabSize}.`);
    }
    this.#adapter = adapter;
  }

  /** The largest [rows, length] logits block one buffer may hold. */
  maxElements(): number {
    return Math.floor(this.device.limits.maxStorageBufferBindingSize / this.elementBytes);
  }

  target(rows: number, length: number): OrtTensor {
    const dims = [rows, length, this.vocabSize];
    const bytes = align4(rows * length * this.vocabSize * this.elementBytes);
    this.logits = this.grow(this.logits, bytes, BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST, 'webgrpo logits');
    this.adaptedRows.clear(); // the decoder writes fresh logits into it
    // No dispose callback: the buffer belongs to this object and is reused by the next call.
    return this.Tensor.fromGpuBuffer(this.logits, { dataType: this.dtype, dims });
  }

  async sample(logits: OrtTensor, picks: SamplePick[], config: SamplingConfig, hidden?: OrtTensor): Promise<SampledToken[]> {
    const greedy = config.temperature === 0;
    const items = new Uint32Array(picks.length * 2);
    const floats = new Float32Array(items.buffer);
    picks.forEach((pick, i) => {
      items[2 * i] = pick.offset;
      floats[2 * i + 1] = Math.min(pick.u, 0.99999994); // float32 rounding must not reach 1
    });
    const masks = this.maskBits(picks);
    const params = new ArrayBuffer(PARAMS_BYTES);
    new Uint32Array(params, 0, 4).set([this.vocabSize, picks.length, greedy ? 1 : 0, config.topK]);
    new Float32Array(params, 16, 3).set([greedy ? 1 : 1 / config.temperature, config.topP, config.minP > 0 ? Math.log(config.minP) : 0]);
    new Uint32Array(params, 28, 3).set([config.minP > 0 ? 1 : 0, this.maskWords, masks ? 1 : 0]);
    const out = await this.run('sample', logits, items, params, picks.length, this.adapterRows(picks, hidden), 0, masks);
    const ids = new Uint32Array(out.buffer);
    return picks.map((_, i) => ({ tokenId: ids[4 * i], logprob: out[4 * i + 1], sampledLogprob: out[4 * i + 2] }));
  }

  private get maskWords(): number {
    return (this.vocabSize + 31) >>> 5;
  }

  /**
   * The picks' masks as one bitset per row (rows without one allow every token), or undefined when
   * no pick has a mask. Bits past a mask's own length (a tokenizer smaller than the logits) are 0.
   */
  private maskBits(picks: SamplePick[]): Uint32Array | undefined {
    if (!picks.some((pick) => pick.mask)) return undefined;
    const words = this.maskWords;
    const bits = new Uint32Array(picks.length * words);
    picks.forEach(({ mask }, i) => {
      if (mask) bits.set(mask.length > words ? mask.subarray(0, words) : mask, i * words);
      else bits.fill(0xffffffff, i * words, (i + 1) * words);
    });
    return bits;
  }

  async score(logits: OrtTensor, picks: ScorePick[], temperature: number, hidden?: OrtTensor): Promise<TokenScore[]> {
    const items = new Uint32Array(picks.length * 2);
    picks.forEach((pick, i) => items.set([pick.offset, pick.target], 2 * i));
    const params = new ArrayBuffer(PARAMS_BYTES);
    new Uint32Array(params, 0, 4).set([this.vocabSize, picks.length, 0, 0]);
    new Float32Array(params, 16, 3).set([temperature > 0 ? 1 / temperature : 1, 1, 0]);
    const out = await this.run('score', logits, items, params, picks.length, this.adapterRows(picks, hidden));
    return picks.map((_, i) => ({ logprob: out[4 * i], entropy: out[4 * i + 1] }));
  }

  async top(logits: OrtTensor, offsets: number[], k: number, temperature: number, hidden?: OrtTensor): Promise<TopLogprob[][]> {
    const count = Math.min(k, this.vocabSize);
    const items = new Uint32Array(offsets.length * 2);
    offsets.forEach((offset, i) => (items[2 * i] = offset));
    const params = new ArrayBuffer(PARAMS_BYTES);
    new Uint32Array(params, 0, 4).set([this.vocabSize, offsets.length, 0, count]);
    new Float32Array(params, 16, 3).set([temperature > 0 ? 1 / temperature : 1, 1, 0]);
    const adapt = this.adapterRows(offsets.map((offset) => ({ offset })), hidden);
    const out = await this.run('top', logits, items, params, offsets.length, adapt, offsets.length * count * 8);
    const ids = new Uint32Array(out.buffer);
    return offsets.map((_, i) => Array.from({ length: count }, (_, j) => ({ tokenId: ids[2 * (i * count + j)], logprob: out[2 * (i * count + j) + 1] })));
  }

  /** The picked rows still to adapt, as (logits offset, hidden offset) pairs, with the hidden state. */
  private adapterRows(picks: ReadonlyArray<{ offset: number }>, hidden: OrtTensor | undefined): AdapterRows | undefined {
    const adapter = this.#adapter;
    if (!adapter || !hidden) return undefined;
    const rows: Array<[number, number]> = [];
    for (const { offset } of picks) {
      if (this.adaptedRows.has(offset)) continue;
      this.adaptedRows.add(offset);
      rows.push([offset, (offset / this.vocabSize) * adapter.hiddenSize]);
    }
    return rows.length ? { adapter, hidden, rows } : undefined;
  }

  /**
   * Runs one kernel over `count` rows and reads back its output: 16 bytes per row, or `topBytes`
   * for 'top'. 'sample' binds the rows' mask bitsets (`masks`; a stand-in when none).
   */
  private async run(kind: Kind, logits: OrtTensor, items: Uint32Array, params: ArrayBuffer, count: number, adapt?: AdapterRows, topBytes = 0, masks?: Uint32Array): Promise<Float32Array> {
    const { device } = this;
    const resultBytes = kind === 'top' ? topBytes : count * RESULT_BYTES;
    this.items = this.grow(this.items, items.byteLength, BufferUsage.STORAGE | BufferUsage.COPY_DST, 'webgrpo items');
    this.staging = this.grow(this.staging, resultBytes, BufferUsage.MAP_READ | BufferUsage.COPY_DST, 'webgrpo staging');
    let output: GpuBufferLike;
    if (kind === 'top') output = this.tops = this.grow(this.tops, resultBytes, BufferUsage.STORAGE | BufferUsage.COPY_SRC, 'webgrpo tops');
    else output = this.results = this.grow(this.results, resultBytes, BufferUsage.STORAGE | BufferUsage.COPY_SRC, 'webgrpo results');
    device.queue.writeBuffer(this.items, 0, items);
    device.queue.writeBuffer(this.params, 0, params);
    if (kind === 'sample') {
      this.masks = this.grow(this.masks, masks?.byteLength ?? 4, BufferUsage.STORAGE | BufferUsage.COPY_DST, 'webgrpo masks');
      if (masks) {
        device.queue.writeBuffer(this.masks, 0, masks);
        this.stats.maskBytes += masks.byteLength;
      }
    }

    const pipeline = this.pipelines[kind];
    const bindGroup = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: logits.gpuBuffer } },
        { binding: 1, resource: { buffer: this.params } },
        { binding: 2, resource: { buffer: this.items, size: items.byteLength } },
        { binding: kind === 'top' ? 4 : 3, resource: { buffer: output, size: resultBytes } },
        ...(kind === 'sample' ? [{ binding: 5, resource: { buffer: this.masks!, size: masks?.byteLength ?? 4 } }] : []),
      ],
    });
    const encoder = device.createCommandEncoder({ label: `webgrpo ${kind}` });
    if (adapt) {
      this.applier ??= new GpuAdapterApplier(device);
      const hiddenType = adapt.hidden.type === 'float16' ? 'float16' : 'float32';
      this.applier.encode(encoder, adapt.adapter, { buffer: logits.gpuBuffer, dtype: this.dtype }, { buffer: adapt.hidden.gpuBuffer, dtype: hiddenType }, adapt.rows);
    }
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(Math.min(count, MAX_DISPATCH), Math.ceil(count / MAX_DISPATCH));
    pass.end();
    encoder.copyBufferToBuffer(output, 0, this.staging, 0, resultBytes);
    device.queue.submit([encoder.finish()]);

    await this.staging.mapAsync(MapMode.READ, 0, resultBytes);
    const out = new Float32Array(this.staging.getMappedRange(0, resultBytes).slice(0));
    this.staging.unmap();
    this.stats.readbackBytes += resultBytes;
    if (kind !== 'top') {
      // A row's alternatives come with its sample or score, which counted the row already.
      this.stats.fullRowBytes += count * this.vocabSize * this.elementBytes;
      this.stats.rows += count;
    }
    return out;
  }

  /** Reuses `buffer` when it is big enough, otherwise replaces it with one of at least `bytes`. */
  private grow(buffer: GpuBufferLike | undefined, bytes: number, usage: number, label: string): GpuBufferLike {
    if (buffer && buffer.size >= bytes) return buffer;
    buffer?.destroy();
    // Round up to a power of two so a slowly growing need does not reallocate every call.
    const rounded = Math.max(256, 2 ** Math.ceil(Math.log2(Math.max(bytes, 4))));
    const size = Math.max(bytes, Math.min(rounded, this.device.limits.maxStorageBufferBindingSize));
    return this.device.createBuffer({ size, usage, label });
  }

  destroy(): void {
    this.applier?.destroy();
    this.applier = undefined;
    for (const buffer of [this.params, this.logits, this.items, this.results, this.tops, this.staging, this.masks]) buffer?.destroy();
    this.logits = this.items = this.results = this.tops = this.staging = this.masks = undefined;
  }
}

type Kind = 'sample' | 'score' | 'top';

interface AdapterRows {
  adapter: GpuHeadAdapter;
  hidden: OrtTensor;
  rows: Array<[number, number]>;
}

function align4(bytes: number): number {
  return Math.ceil(bytes / 4) * 4;
}
