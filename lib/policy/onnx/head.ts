/**
 * The trainable surface of an ONNX policy loaded with `hiddenState: true`: the adapter on its LM
 * head (applied by generateGroup and scoreCompletions), and a walk over the frozen model's
 * per-token states (base logits z and hidden states h of the positions that predict completion
 * tokens) for the gradient trainer in lib/grad, which keeps what it needs from each window.
 */
import { InvalidInputError, UnsupportedError } from '../../errors.js';
import type { PromptInput } from '../../core/policy.js';
import type { Decoder } from './decoder.js';
import { forEachScoreWindow, type ScoreWindow } from './score.js';
import { MAX_GPU_RANK, type HeadAdapterBinding } from './webgpu-adapter.js';
import type { GpuDeviceLike } from './webgpu-types.js';

export interface HeadParts {
  decoder: Decoder;
  vocabSize: number;
  hiddenSize: number;
  maxLogits: number;
  /** The WebGPU device the logits live on; undefined for host memory (CPU, WASM). */
  device?: GpuDeviceLike;
  /** Queues work after the policy's other requests (sessions are not re-entrant). */
  schedule<T>(task: () => Promise<T>): Promise<T>;
  promptIds(input: PromptInput): number[];
}

export interface StateRequest extends PromptInput {
  completions: number[][];
  signal?: AbortSignal;
}

export class TrainableHead {
  constructor(private readonly parts: HeadParts) {}

  get vocabSize(): number {
    return this.parts.vocabSize;
  }

  get hiddenSize(): number {
    return this.parts.hiddenSize;
  }

  /** Where adapters must live: 'gpu' (GPU buffers on `device`) or 'host' (Float32Arrays). */
  get kind(): 'gpu' | 'host' {
    return this.parts.device ? 'gpu' : 'host';
  }

  get device(): GpuDeviceLike | undefined {
    return this.parts.device;
  }

  get adapter(): HeadAdapterBinding | undefined {
    return this.parts.decoder.logits.adapter;
  }

  /** Sets the adapter generateGroup and scoreCompletions apply; undefined restores the base model. */
  setAdapter(adapter: HeadAdapterBinding | undefined): void {
    if (adapter !== undefined) {
      const { hiddenSize, vocabSize, rank, scale, kind } = adapter;
      if (kind !== this.kind) {
        throw new InvalidInputError('adapter', `holds its weights on the ${kind === 'gpu' ? 'GPU' : 'host'}, but this policy runs on the ${this.kind === 'gpu' ? 'GPU' : 'host'}.`);
      }
      if (hiddenSize !== this.hiddenSize || vocabSize !== this.vocabSize) {
        throw new InvalidInputError('adapter', `is for hidden size ${hiddenSize} and vocabulary ${vocabSize}; this model has ${this.hiddenSize} and ${this.vocabSize}.`);
      }
      if (!(Number.isInteger(rank) && rank >= 1) || !Number.isFinite(scale)) throw new InvalidInputError('adapter', 'needs an integer rank >= 1 and a finite scale.');
      if (kind === 'gpu' && rank > MAX_GPU_RANK) throw new UnsupportedError(`WebGPU adapters have rank at most ${MAX_GPU_RANK}, got ${rank}.`);
    }
    this.parts.decoder.logits.adapter = adapter as never;
  }

  /**
   * Runs the frozen model over the prompt and completions (queued after the policy's other
   * requests); `visit` gets every window while its tensors are alive. The adapter is not applied.
   */
  collect(request: StateRequest, visit: (window: ScoreWindow) => Promise<void>): Promise<void> {
    const { completions } = request;
    if (!Array.isArray(completions) || completions.length === 0) throw new InvalidInputError('completions', 'must be a non-empty array of token id arrays.');
    completions.forEach((tokens, i) => {
      if (!Array.isArray(tokens) || tokens.some((t) => !Number.isInteger(t) || t < 0 || t >= this.vocabSize)) {
        throw new InvalidInputError(`completions[${i}]`, `must be an array of token ids from 0 to ${this.vocabSize - 1}.`);
      }
    });
    return this.parts.schedule(async () => {
      const promptIds = this.parts.promptIds(request);
      const { decoder, vocabSize, maxLogits, hiddenSize } = this.parts;
      await forEachScoreWindow(decoder, vocabSize, maxLogits, { promptIds, completions: request.completions, temperature: 1, signal: request.signal }, async (window) => {
        const width = window.hidden?.dims.at(-1);
        if (width !== hiddenSize) throw new UnsupportedError(`The model's hidden state has width ${width}, not the configured hidden_size ${hiddenSize}.`);
        await visit(window);
      });
    });
  }
}
