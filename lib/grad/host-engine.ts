/**
 * The adapter's forward, backward and update on the CPU (engine.ts has the contract), in float64
 * over float32 storage. For a token with adapted logits z' and p = softmax(z'/T):
 *
 *   d log p(y) / d z'_j = (1/T) (1[j = y] - p_j)
 *   d H / d z'_j        = -(1/T) p_j (log p_j + H)
 *
 * so with g = d loss / d log p(y) and c = d loss / d H, dz'_j = (1/T) (g 1[j = y] - p_j (g + c (log p_j + H))),
 * and with u = s (h A):  dB += u^T dz',  du = dz' B^T,  dA += s h^T du.
 * Every token is done in turn with O(V) scratch.
 */
import { UnsupportedError } from '../errors.js';
import { halfToFloat } from '../policy/logits.js';
import { adaptedRow, adapterInput, type HeadAdapterWeights } from '../policy/head-adapter.js';
import type { HostHeadAdapter } from '../policy/onnx/webgpu-adapter.js';
import type { ScoreWindow } from '../policy/onnx/score.js';
import type { AdapterShape } from './adapter.js';
import type { AdapterState, HeadEngine, TokenStats } from './engine.js';
import { adamwUpdate, type ResolvedOptimizer } from './optimizer.js';

export class HostEngine implements HeadEngine {
  readonly kind = 'host';
  readonly shape: AdapterShape;
  private readonly weights: HostHeadAdapter;
  private readonly m: { a: Float32Array; b: Float32Array };
  private readonly v: { a: Float32Array; b: Float32Array };
  private readonly grad: { a: Float64Array; b: Float64Array };
  private t = 0;
  private z = new Float32Array(0);
  private h = new Float32Array(0);
  private count = 0;
  // Per-token scratch.
  private readonly u: Float64Array;
  private readonly du: Float64Array;
  private readonly acc: Float64Array;
  private readonly row: Float32Array;

  constructor(initial: HeadAdapterWeights) {
    const { hiddenSize: d, vocabSize: v, rank: r, scale } = initial;
    this.shape = { hiddenSize: d, vocabSize: v, rank: r, scale };
    this.weights = { kind: 'host', ...this.shape, a: Float32Array.from(initial.a), b: Float32Array.from(initial.b) };
    this.m = { a: new Float32Array(d * r), b: new Float32Array(r * v) };
    this.v = { a: new Float32Array(d * r), b: new Float32Array(r * v) };
    this.grad = { a: new Float64Array(d * r), b: new Float64Array(r * v) };
    this.u = new Float64Array(r);
    this.du = new Float64Array(r);
    this.acc = new Float64Array(v);
    this.row = new Float32Array(v);
  }

  resetStates(count: number): void {
    const { vocabSize: v, hiddenSize: d } = this.shape;
    this.count = count;
    if (count === 0) {
      this.z = new Float32Array(0);
      this.h = new Float32Array(0);
    }
    if (this.z.length < count * v) this.z = new Float32Array(count * v);
    if (this.h.length < count * d) this.h = new Float32Array(count * d);
  }

  async writeWindow(window: ScoreWindow, slots: ArrayLike<number>): Promise<void> {
    const { vocabSize: v, hiddenSize: d } = this.shape;
    const { logits, hidden } = window;
    if (!hidden) throw new UnsupportedError('The model window has no hidden state; load the policy with hiddenState: true.');
    window.picks.forEach(({ offset }, k) => {
      const slot = slots[k];
      const flatRow = offset / v;
      this.z.set(rowOf(logits, offset, v), slot * v);
      this.h.set(rowOf(hidden, flatRow * d, d), slot * d);
    });
  }

  async writeStates(z: Float32Array, h: Float32Array): Promise<void> {
    this.resetStates(h.length / this.shape.hiddenSize);
    this.z.set(z);
    this.h.set(h);
  }

  async forward(targets: Int32Array, temperature: number): Promise<TokenStats> {
    const { vocabSize: v, hiddenSize: d } = this.shape;
    const invT = 1 / temperature;
    const n = this.count;
    const out: TokenStats = { logps: new Float64Array(n), entropies: new Float64Array(n), refLogps: new Float64Array(n) };
    const stats = { max: 0, logZ: 0, logp: 0, entropy: 0 };
    for (let t = 0; t < n; t++) {
      rowStats(this.z, t * v, v, invT, targets[t], stats);
      out.refLogps[t] = stats.logp;
      adapterInput(this.h, t * d, this.weights, this.u);
      adaptedRow(this.z, t * v, this.u, this.weights, this.acc, this.row);
      rowStats(this.row, 0, v, invT, targets[t], stats);
      out.logps[t] = stats.logp;
      out.entropies[t] = stats.entropy;
    }
    return out;
  }

  async backward(targets: Int32Array, dLogp: Float64Array, dEntropy: Float64Array, temperature: number): Promise<number> {
    const { vocabSize: v, hiddenSize: d, rank: r, scale } = this.shape;
    const { a: gA, b: gB } = this.grad;
    const { b } = this.weights;
    const { u, du, row } = this;
    const dz = this.acc; // free between adaptedRow calls
    const invT = 1 / temperature;
    gA.fill(0);
    gB.fill(0);
    const stats = { max: 0, logZ: 0, logp: 0, entropy: 0 };
    for (let t = 0; t < this.count; t++) {
      const g = dLogp[t];
      const c = dEntropy[t];
      if (g === 0 && c === 0) continue;
      adapterInput(this.h, t * d, this.weights, u);
      adaptedRow(this.z, t * v, u, this.weights, this.acc, row);
      rowStats(row, 0, v, invT, targets[t], stats);
      for (let j = 0; j < v; j++) {
        const logp = (row[j] - stats.max) * invT - stats.logZ;
        const p = Math.exp(logp);
        // 0 * -Infinity would be NaN for masked-out vocabulary entries (p = 0): they add nothing.
        dz[j] = invT * (p === 0 ? 0 : -p * (g + c * (logp + stats.entropy)));
      }
      dz[targets[t]] += invT * g;
      // One contiguous pass over B's row k and dB's row k per rank component.
      for (let k = 0; k < r; k++) {
        const uk = u[k];
        const base = k * v;
        let sum = 0;
        for (let j = 0; j < v; j++) {
          gB[base + j] += uk * dz[j];
          sum += dz[j] * b[base + j];
        }
        du[k] = sum;
      }
      const h0 = t * d;
      for (let i = 0; i < d; i++) {
        const hi = this.h[h0 + i] * scale;
        if (hi === 0) continue;
        for (let k = 0; k < r; k++) gA[i * r + k] += hi * du[k];
      }
    }
    let squares = 0;
    for (const x of gA) squares += x * x;
    for (const x of gB) squares += x * x;
    return Math.sqrt(squares);
  }

  async gradients(): Promise<{ a: Float32Array; b: Float32Array }> {
    return { a: Float32Array.from(this.grad.a), b: Float32Array.from(this.grad.b) };
  }

  async step(optimizer: ResolvedOptimizer, clip: number): Promise<void> {
    this.t += 1;
    adamwUpdate(this.weights.a, this.grad.a, this.m.a, this.v.a, this.t, clip, optimizer);
    adamwUpdate(this.weights.b, this.grad.b, this.m.b, this.v.b, this.t, clip, optimizer);
  }

  get updates(): number {
    return this.t;
  }

  binding(): HostHeadAdapter {
    return this.weights;
  }

  async read(): Promise<AdapterState> {
    const copy = (x: { a: Float32Array; b: Float32Array }) => ({ a: x.a.slice(), b: x.b.slice() });
    return { a: this.weights.a.slice(), b: this.weights.b.slice(), m: copy(this.m), v: copy(this.v), updates: this.t };
  }

  load(state: AdapterState): void {
    this.weights.a.set(state.a);
    this.weights.b.set(state.b);
    this.m.a.set(state.m.a);
    this.m.b.set(state.m.b);
    this.v.a.set(state.v.a);
    this.v.b.set(state.v.b);
    this.t = state.updates;
  }

  dispose(): void {
    this.resetStates(0);
  }
}

/**
 * Max, log-normaliser, log p(target) and entropy of softmax(x / T) over one row, in float64, as
 * lib/math/logprobs.ts computes them.
 */
export function rowStats(
  x: ArrayLike<number>,
  base: number,
  v: number,
  invT: number,
  target: number,
  out: { max: number; logZ: number; logp: number; entropy: number },
): void {
  let max = -Infinity;
  for (let j = base; j < base + v; j++) if (x[j] > max) max = x[j];
  let sum = 0;
  let weighted = 0;
  for (let j = base; j < base + v; j++) {
    const dj = (x[j] - max) * invT;
    const e = Math.exp(dj);
    sum += e;
    weighted += e === 0 ? 0 : e * dj;
  }
  const logZ = Math.log(sum);
  out.max = max;
  out.logZ = logZ;
  out.logp = (x[base + target] - max) * invT - logZ;
  out.entropy = logZ - weighted / sum;
}

/** One row of a float32 or float16 host tensor as float32. */
export function rowOf(tensor: ScoreWindow['logits'], offset: number, length: number): Float32Array {
  if (tensor.type === 'float16') {
    const data = tensor.data;
    return halfToFloat(new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2), offset, length);
  }
  return (tensor.data as Float32Array).subarray(offset, offset + length);
}
