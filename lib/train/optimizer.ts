/**
 * AdamW with global gradient-norm clipping, as PyTorch's `clip_grad_norm_` followed by
 * `torch.optim.AdamW` (decoupled weight decay, bias-corrected moments):
 *
 *   g    <- g * min(1, maxGradNorm / (||g|| + 1e-6))
 *   p    <- p * (1 - lr * weightDecay)
 *   m    <- beta1 m + (1 - beta1) g;   v <- beta2 v + (1 - beta2) g^2
 *   p    <- p - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
 *
 * The host form is here; the WebGPU engine runs the same update in a kernel.
 */
import { InvalidInputError } from '../errors.js';

export interface OptimizerOptions {
  /** Learning rate; default 0.02 (a small adapter on a frozen model learns fast). */
  lr?: number;
  /** Adam's beta1; default 0.9. */
  beta1?: number;
  /** Adam's beta2; default 0.999. */
  beta2?: number;
  /** Default 1e-8. */
  eps?: number;
  /** Decoupled weight decay; default 0. */
  weightDecay?: number;
  /** Clip the global gradient norm to this; default 1 (TRL's max_grad_norm). 0 or Infinity: no clipping. */
  maxGradNorm?: number;
}

export type ResolvedOptimizer = Required<OptimizerOptions>;

export const OPTIMIZER_DEFAULTS: ResolvedOptimizer = { lr: 0.02, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 };

export function resolveOptimizer(options: OptimizerOptions = {}): ResolvedOptimizer {
  if (options === null || typeof options !== 'object') throw new InvalidInputError('optimizer', 'must be an object { lr?, beta1?, ... }.');
  const out = { ...OPTIMIZER_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) } as ResolvedOptimizer;
  const check = (name: keyof ResolvedOptimizer, ok: (x: number) => boolean, what: string) => {
    const value = out[name];
    if (typeof value !== 'number' || Number.isNaN(value) || !ok(value)) throw new InvalidInputError(`optimizer.${name}`, `must be ${what}, got ${String(value)}.`);
  };
  check('lr', (x) => Number.isFinite(x) && x > 0, 'a finite number > 0');
  check('beta1', (x) => x >= 0 && x < 1, 'in [0, 1)');
  check('beta2', (x) => x >= 0 && x < 1, 'in [0, 1)');
  check('eps', (x) => Number.isFinite(x) && x > 0, 'a finite number > 0');
  check('weightDecay', (x) => Number.isFinite(x) && x >= 0, 'a finite number >= 0');
  check('maxGradNorm', (x) => x >= 0, '>= 0 (0 or Infinity: no clipping)');
  return out;
}

/** The factor clip_grad_norm_ multiplies gradients by. */
export function clipFactor(norm: number, maxGradNorm: number): number {
  if (!(maxGradNorm > 0) || maxGradNorm === Infinity) return 1;
  return Math.min(1, maxGradNorm / (norm + 1e-6));
}

/** One AdamW update of `params` in place; `t` is the 1-based step count. */
export function adamwUpdate(
  params: Float32Array,
  grad: ArrayLike<number>,
  m: Float32Array,
  v: Float32Array,
  t: number,
  clip: number,
  o: ResolvedOptimizer,
): void {
  const c1 = 1 - o.beta1 ** t;
  const c2 = 1 - o.beta2 ** t;
  const decay = 1 - o.lr * o.weightDecay;
  for (let i = 0; i < params.length; i++) {
    const g = grad[i] * clip;
    m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
    v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
    params[i] = params[i] * decay - (o.lr * (m[i] / c1)) / (Math.sqrt(v[i] / c2) + o.eps);
  }
}

/** One L2 norm over every tensor of a gradient, as clip_grad_norm_ takes it over all trainable parameters. */
export function globalNorm(tensors: readonly ArrayLike<number>[]): number {
  let squares = 0;
  for (const g of tensors) for (let i = 0; i < g.length; i++) squares += g[i] * g[i];
  return Math.sqrt(squares);
}

/** One clipped AdamW update (the `t`-th) of every tensor in place; tensor k of params, grads and moments align. */
export function adamwTensors(params: readonly Float32Array[], grads: readonly ArrayLike<number>[], m: readonly Float32Array[], v: readonly Float32Array[], t: number, clip: number, o: ResolvedOptimizer): void {
  if (grads.length !== params.length || grads.some((g, k) => g.length !== params[k].length)) throw new InvalidInputError('grad', "does not have the parameters' layout.");
  params.forEach((p, k) => adamwUpdate(p, grads[k], m[k], v[k], t, clip, o));
}
