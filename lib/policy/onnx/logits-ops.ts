/**
 * What the decoding loops do with a logits tensor, per backend. CPU and WASM read the rows they
 * need from host memory; WebGPU runs kernels next to the logits and reads back a few bytes per row
 * (webgpu-sampler.ts).
 */
import { adaptedRow, adapterInput } from '../head-adapter.js';
import { halfToFloat, scoreToken, topLogprobs, type TokenScore } from '../logits.js';
import { sampleToken, type SampledToken, type SamplingConfig } from '../sampling.js';
import type { TopLogprob } from '../../core/policy.js';
import type { OrtTensor } from './ort-types.js';
import type { HeadAdapterBinding, HostHeadAdapter } from './webgpu-adapter.js';

/** Element offset of a row in the flattened [rows, length, vocab] logits, and its uniform draw. */
export interface SamplePick {
  offset: number;
  u: number;
  /** Allowed tokens (constrained decoding); absent: all. */
  mask?: Uint32Array;
}

export interface ScorePick {
  offset: number;
  target: number;
}

export interface TransferStats {
  /** Bytes copied from logits storage to the host for sampling and scoring. */
  readbackBytes: number;
  /** Bytes the same rows would have cost if read back whole. */
  fullRowBytes: number;
  /** Rows sampled or scored. */
  rows: number;
  /** Bytes of allowed-token masks copied to the device (WebGPU: one bit per token per constrained row). */
  maskBytes: number;
}

export interface LogitsOps {
  /** Where the decoder should write [rows, length, vocab] logits; undefined lets the runtime allocate. */
  target(rows: number, length: number): OrtTensor | undefined;
  /**
   * The LM-head adapter (head-adapter.ts) applied to each sampled or scored row, from the matching
   * row of `hidden`; undefined: the base model. Set by `OnnxPolicy.setAdapter`.
   */
  adapter: HeadAdapterBinding | undefined;
  sample(logits: OrtTensor, picks: SamplePick[], config: SamplingConfig, hidden?: OrtTensor): Promise<SampledToken[]>;
  score(logits: OrtTensor, picks: ScorePick[], temperature: number, hidden?: OrtTensor): Promise<TokenScore[]>;
  /**
   * The k most likely tokens of the rows at `offsets` (logits.ts topLogprobs), after they were
   * sampled or scored in the same pass (so an adapter is applied once).
   */
  top(logits: OrtTensor, offsets: number[], k: number, temperature: number, hidden?: OrtTensor): Promise<TopLogprob[][]>;
  readonly stats: TransferStats;
  destroy(): void;
}

export function newStats(): TransferStats {
  return { readbackBytes: 0, fullRowBytes: 0, rows: 0, maskBytes: 0 };
}

/** Logits in host memory (onnxruntime-node, or the WASM backend). */
export class HostLogits implements LogitsOps {
  readonly stats = newStats();
  adapter: HostHeadAdapter | undefined;
  private readonly scratch: Float64Array;
  private adapted?: { logits: OrtTensor; offset: number; row: Float32Array; u: Float64Array };

  constructor(private readonly vocabSize: number) {
    this.scratch = new Float64Array(2 * vocabSize);
  }

  target(): undefined {
    return undefined;
  }

  async sample(logits: OrtTensor, picks: SamplePick[], config: SamplingConfig, hidden?: OrtTensor): Promise<SampledToken[]> {
    return picks.map(({ offset, u, mask }) => {
      const [row, start] = this.row(logits, offset, hidden);
      return sampleToken(row, start, this.vocabSize, config, u, this.scratch, mask);
    });
  }

  async score(logits: OrtTensor, picks: ScorePick[], temperature: number, hidden?: OrtTensor): Promise<TokenScore[]> {
    return picks.map(({ offset, target }) => {
      const [row, start] = this.row(logits, offset, hidden);
      return scoreToken(row, start, this.vocabSize, target, temperature);
    });
  }

  async top(logits: OrtTensor, offsets: number[], k: number, temperature: number, hidden?: OrtTensor): Promise<TopLogprob[][]> {
    return offsets.map((offset) => {
      const [row, start] = this.view(logits, offset, hidden);
      return topLogprobs(row, start, this.vocabSize, k, temperature);
    });
  }

  private row(logits: OrtTensor, offset: number, hidden: OrtTensor | undefined): [Float32Array, number] {
    const bytes = logits.type === 'float16' ? 2 : 4;
    this.stats.readbackBytes += this.vocabSize * bytes;
    this.stats.fullRowBytes += this.vocabSize * bytes;
    this.stats.rows++;
    return this.view(logits, offset, hidden);
  }

  private view(logits: OrtTensor, offset: number, hidden: OrtTensor | undefined): [Float32Array, number] {
    let row: [Float32Array, number];
    if (logits.type === 'float32') row = [logits.data as Float32Array, offset];
    else if (logits.type === 'float16') row = [halfToFloat(asHalfBits(logits.data), offset, this.vocabSize), 0];
    else throw new TypeError(`Unsupported logits type ${logits.type}`);
    return this.adapter && hidden ? [this.adapt(logits, offset, row, hidden, this.adapter), 0] : row;
  }

  /** z' of the row at `offset` (kept while the same row is asked for again, as a group's first token is). */
  private adapt(logits: OrtTensor, offset: number, [z, start]: [Float32Array, number], hidden: OrtTensor, adapter: HostHeadAdapter): Float32Array {
    if (this.adapted?.logits === logits && this.adapted.offset === offset) return this.adapted.row;
    const d = adapter.hiddenSize;
    const flatRow = offset / this.vocabSize;
    const h = hidden.type === 'float16' ? halfToFloat(asHalfBits(hidden.data), flatRow * d, d) : (hidden.data as Float32Array).subarray(flatRow * d, (flatRow + 1) * d);
    const state = this.adapted ?? { logits, offset, row: new Float32Array(this.vocabSize), u: new Float64Array(adapter.rank) };
    if (state.u.length !== adapter.rank) state.u = new Float64Array(adapter.rank);
    adapterInput(h, 0, adapter, state.u);
    adaptedRow(z, start, state.u, adapter, this.scratch, state.row);
    this.adapted = Object.assign(state, { logits, offset });
    return state.row;
  }

  destroy(): void {}
}

/** onnxruntime hands float16 data out as Uint16Array, or Float16Array where the engine has it. */
function asHalfBits(data: OrtTensor['data']): Uint16Array {
  return new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2);
}
