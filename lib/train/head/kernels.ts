/**
 * Where the adapter's arithmetic runs. The frozen model is run once per generation batch; its
 * per-token states (base logits z, V values, and hidden state h, d values, of every position that
 * predicts a completion token) are kept by the engine, and every optimisation iteration works on
 * them:
 *
 *   forward:   z' = z + s (h A) B;  log p'(y) and H' of softmax(z'/T), and log p(y) of softmax(z/T)
 *   backward:  from d loss / d log p'(y) and d loss / d H' per token to dA, dB
 *   step:      gradient-norm clipping and AdamW
 *
 * `GraphHeadEngine` (lib/train/graph/head-graph-engine.ts) implements it: the head graphs on the
 * onnxruntime and backend the policy runs on (Node CPU, WASM, WebGPU).
 */
import type { HeadAdapterBinding } from '../../policy/onnx/webgpu-adapter.js';
import type { ScoreWindow } from '../../policy/onnx/score.js';
import type { AdapterShape } from './adapter.js';
import type { ResolvedOptimizer } from '../optimizer.js';
import type { AdapterState } from './state.js';

export type { AdapterState } from './state.js';

export interface TokenStats {
  /** log p'(y) under the adapted model (softmax(z'/T)), per token. */
  logps: Float64Array;
  /** Entropy of softmax(z'/T), per token. */
  entropies: Float64Array;
  /** log p(y) under the base model (softmax(z/T)): the reference. */
  refLogps: Float64Array;
}

export interface HeadEngine {
  readonly kind: 'host' | 'gpu';
  readonly shape: AdapterShape;
  /** AdamW updates applied so far (restored by `load`). */
  readonly updates: number;
  /** Room for `count` token states; the previous ones are dropped. */
  resetStates(count: number): void;
  /** Copies the picked rows of a model window into token slots `slots[k]` (one per pick). */
  writeWindow(window: ScoreWindow, slots: ArrayLike<number>): Promise<void>;
  /** Token states given directly: z as count x V, h as count x d (tests, or a model run elsewhere). */
  writeStates(z: Float32Array, h: Float32Array): Promise<void>;
  forward(targets: Int32Array, temperature: number): Promise<TokenStats>;
  /**
   * Sets dA, dB (replacing earlier ones) from per-token d loss / d log p'(y) and d loss / d H';
   * returns the global gradient norm.
   */
  backward(targets: Int32Array, dLogp: Float64Array, dEntropy: Float64Array, temperature: number): Promise<number>;
  /** Host copies of the last gradients (tests). */
  gradients(): Promise<{ a: Float32Array; b: Float32Array }>;
  /** Clips the gradients by `clip` (the clip_grad_norm_ factor) and applies one AdamW update. */
  step(optimizer: ResolvedOptimizer, clip: number): Promise<void>;
  /** The adapter in the form the policy applies (on the GPU engine, its live buffers). */
  binding(): HeadAdapterBinding;
  read(): Promise<AdapterState>;
  load(state: AdapterState): void;
  dispose(): void;
}
