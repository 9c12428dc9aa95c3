/**
 * What the decoding loops do with a logits tensor, per backend. CPU and WASM read the rows they
 * need from host memory; WebGPU runs kernels next to the logits and reads back a few bytes per row
 * (webgpu-sampler.ts).
 */
import { halfToFloat, scoreToken, type TokenScore } from '../logits.js';
import { sampleToken, type SampledToken, type SamplingConfig } from '../sampling.js';
import type { OrtTensor } from './runtime.js';

/** Element offset of a row in the flattened [rows, length, vocab] logits, and its uniform draw. */
export interface SamplePick {
  offset: number;
  u: number;
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
}

export interface LogitsOps {
  /** Where the decoder should write [rows, length, vocab] logits; undefined lets the runtime allocate. */
  target(rows: number, length: number): OrtTensor | undefined;
  sample(logits: OrtTensor, picks: SamplePick[], config: SamplingConfig): Promise<SampledToken[]>;
  score(logits: OrtTensor, picks: ScorePick[], temperature: number): Promise<TokenScore[]>;
  readonly stats: TransferStats;
  destroy(): void;
}

export function newStats(): TransferStats {
  return { readbackBytes: 0, fullRowBytes: 0, rows: 0 };
}

/** Logits in host memory (onnxruntime-node, or the WASM backend). */
export class HostLogits implements LogitsOps {
  readonly stats = newStats();
  private readonly scratch: Float64Array;

  constructor(private readonly vocabSize: number) {
    this.scratch = new Float64Array(2 * vocabSize);
  }

  target(): undefined {
    return undefined;
  }

  async sample(logits: OrtTensor, picks: SamplePick[], config: SamplingConfig): Promise<SampledToken[]> {
    return picks.map(({ offset, u }) => {
      const [row, start] = this.row(logits, offset);
      return sampleToken(row, start, this.vocabSize, config, u, this.scratch);
    });
  }

  async score(logits: OrtTensor, picks: ScorePick[], temperature: number): Promise<TokenScore[]> {
    return picks.map(({ offset, target }) => {
      const [row, start] = this.row(logits, offset);
      return scoreToken(row, start, this.vocabSize, target, temperature);
    });
  }

  private row(logits: OrtTensor, offset: number): [Float32Array, number] {
    const bytes = logits.type === 'float16' ? 2 : 4;
    this.stats.readbackBytes += this.vocabSize * bytes;
    this.stats.fullRowBytes += this.vocabSize * bytes;
    this.stats.rows++;
    if (logits.type === 'float32') return [logits.data as Float32Array, offset];
    if (logits.type === 'float16') return [halfToFloat(asHalfBits(logits.data), offset, this.vocabSize), 0];
    throw new TypeError(`Unsupported logits type ${logits.type}`);
  }

  destroy(): void {}
}

/** onnxruntime hands float16 data out as Uint16Array, or Float16Array where the engine has it. */
function asHalfBits(data: OrtTensor['data']): Uint16Array {
  return new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2);
}
