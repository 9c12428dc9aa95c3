/**
 * AdamW with global gradient-norm clipping over every A and B of a LoRA adapter: the head
 * adapter's optimizer (lib/grad/optimizer.ts, PyTorch's clip_grad_norm_ then AdamW) applied
 * tensor by tensor, with one norm over all of them, as TRL clips over all trainable parameters.
 */
import { InvalidInputError } from '../errors.js';
import { adamwUpdate, clipFactor, resolveOptimizer, type OptimizerOptions, type ResolvedOptimizer } from '../grad/optimizer.js';
import { loraTensors, zerosLike, type LoraAdapter } from './adapter.js';

/** The optimizer's state: what a store commits with the adapter so a run resumes exactly. */
export interface LoraOptimizerState {
  /** Updates taken (AdamW's t). */
  step: number;
  /** First and second moments, in the adapter's layout. */
  m: LoraAdapter;
  v: LoraAdapter;
}

export interface LoraUpdate {
  /** The global gradient norm before clipping. */
  gradNorm: number;
  /** The factor the gradient was multiplied by (1: not clipped). */
  clip: number;
}

export class LoraOptimizer {
  readonly options: ResolvedOptimizer;
  state: LoraOptimizerState;

  constructor(adapter: LoraAdapter, options: OptimizerOptions = {}, state?: LoraOptimizerState) {
    this.options = resolveOptimizer(options);
    if (state && (state.m.layers.length !== adapter.layers.length || loraTensors(state.m).length !== loraTensors(adapter).length)) {
      throw new InvalidInputError('optimizer state', "does not have the adapter's layout.");
    }
    this.state = state ?? { step: 0, m: zerosLike(adapter), v: zerosLike(adapter) };
  }

  /** One update of `adapter` in place from `grad` (same layout). */
  update(adapter: LoraAdapter, grad: LoraAdapter): LoraUpdate {
    const params = loraTensors(adapter);
    const grads = loraTensors(grad);
    const m = loraTensors(this.state.m);
    const v = loraTensors(this.state.v);
    if (grads.length !== params.length) throw new InvalidInputError('grad', "does not have the adapter's layout.");
    let squares = 0;
    for (const g of grads) for (let i = 0; i < g.length; i++) squares += g[i] * g[i];
    const gradNorm = Math.sqrt(squares);
    if (!Number.isFinite(gradNorm)) throw new InvalidInputError('grad', 'is not finite; the update was skipped and the adapter is unchanged.');
    const clip = clipFactor(gradNorm, this.options.maxGradNorm);
    this.state.step++;
    params.forEach((p, k) => adamwUpdate(p, grads[k], m[k], v[k], this.state.step, clip, this.options));
    return { gradNorm, clip };
  }
}
