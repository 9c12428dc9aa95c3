/**
 * The decoder's operations and their exact backward passes, over row-major [rows, cols] buffers.
 * Every sum runs in JavaScript's float64; buffers are `Vec`, Float32Array (half the memory, the
 * precision the ONNX graph itself runs in) or Float64Array (gradient checks). Backward functions
 * add into their input-gradient buffers, so a tensor used twice (the residual stream) collects
 * both contributions.
 */
import type { LoraPair } from './adapter.js';
import { q4MatmulAdd, q4MatmulTransposedAdd } from './q4.js';
import type { Projection } from './weights.js';

export type Vec = Float32Array | Float64Array;
export type Alloc = (n: number) => Vec;

/**
 * y[rows, out] += x[rows, in] W[in, out]. Four rows at a time share each load of W's row (register
 * blocking): about three times the throughput of one row at a time in V8, with no transposed copy.
 */
export function matmulAdd(x: Vec, rows: number, inDim: number, W: Float32Array, outDim: number, y: Vec | Float64Array): void {
  let t = 0;
  for (; t + 4 <= rows; t += 4) {
    const x0 = t * inDim;
    const x1 = x0 + inDim;
    const x2 = x1 + inDim;
    const x3 = x2 + inDim;
    const y0 = t * outDim;
    const y1 = y0 + outDim;
    const y2 = y1 + outDim;
    const y3 = y2 + outDim;
    for (let i = 0; i < inDim; i++) {
      const a0 = x[x0 + i];
      const a1 = x[x1 + i];
      const a2 = x[x2 + i];
      const a3 = x[x3 + i];
      const row = i * outDim;
      for (let o = 0; o < outDim; o++) {
        const w = W[row + o];
        y[y0 + o] += a0 * w;
        y[y1 + o] += a1 * w;
        y[y2 + o] += a2 * w;
        y[y3 + o] += a3 * w;
      }
    }
  }
  for (; t < rows; t++) {
    const x0 = t * inDim;
    const y0 = t * outDim;
    for (let i = 0; i < inDim; i++) {
      const a = x[x0 + i];
      const row = i * outDim;
      for (let o = 0; o < outDim; o++) y[y0 + o] += a * W[row + o];
    }
  }
}

/** dx[rows, in] += dy[rows, out] W[in, out]^T: dot products along W's rows, four rows of dy at a time. */
export function matmulTransposedAdd(dy: Vec | Float64Array, rows: number, outDim: number, W: Float32Array, inDim: number, dx: Vec | Float64Array): void {
  let t = 0;
  for (; t + 4 <= rows; t += 4) {
    const d0 = t * outDim;
    const d1 = d0 + outDim;
    const d2 = d1 + outDim;
    const d3 = d2 + outDim;
    for (let i = 0; i < inDim; i++) {
      const row = i * outDim;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let o = 0; o < outDim; o++) {
        const w = W[row + o];
        s0 += dy[d0 + o] * w;
        s1 += dy[d1 + o] * w;
        s2 += dy[d2 + o] * w;
        s3 += dy[d3 + o] * w;
      }
      dx[t * inDim + i] += s0;
      dx[(t + 1) * inDim + i] += s1;
      dx[(t + 2) * inDim + i] += s2;
      dx[(t + 3) * inDim + i] += s3;
    }
  }
  for (; t < rows; t++) {
    const d0 = t * outDim;
    for (let i = 0; i < inDim; i++) {
      const row = i * outDim;
      let s = 0;
      for (let o = 0; o < outDim; o++) s += dy[d0 + o] * W[row + o];
      dx[t * inDim + i] += s;
    }
  }
}

/**
 * dW[in, out] += x[rows, in]^T dy[rows, out]: the weight gradient of y = x W. Four rows at a time
 * share each pass over dW's row, as matmulAdd shares W's.
 */
export function outerAdd(x: Vec | Float64Array, rows: number, inDim: number, dy: Vec | Float64Array, outDim: number, dW: Float32Array): void {
  let t = 0;
  for (; t + 4 <= rows; t += 4) {
    const d0 = t * outDim;
    const d1 = d0 + outDim;
    const d2 = d1 + outDim;
    const d3 = d2 + outDim;
    for (let i = 0; i < inDim; i++) {
      const a0 = x[t * inDim + i];
      const a1 = x[(t + 1) * inDim + i];
      const a2 = x[(t + 2) * inDim + i];
      const a3 = x[(t + 3) * inDim + i];
      if (a0 === 0 && a1 === 0 && a2 === 0 && a3 === 0) continue;
      const row = i * outDim;
      for (let o = 0; o < outDim; o++) dW[row + o] += a0 * dy[d0 + o] + a1 * dy[d1 + o] + a2 * dy[d2 + o] + a3 * dy[d3 + o];
    }
  }
  for (; t < rows; t++) {
    const d0 = t * outDim;
    for (let i = 0; i < inDim; i++) {
      const a = x[t * inDim + i];
      if (a === 0) continue;
      const row = i * outDim;
      for (let o = 0; o < outDim; o++) dW[row + o] += a * dy[d0 + o];
    }
  }
}

/** y = x W + bias + s (x A^T) B^T for `rows` rows; u = x A^T [rows, r] is kept for the backward. */
export function projectForward(x: Vec, rows: number, p: Projection, lora: LoraPair | undefined, scale: number, y: Vec, u: Vec | undefined): void {
  const { inDim, outDim, weight, bias } = p;
  for (let t = 0; t < rows; t++) {
    const yo = t * outDim;
    if (bias) for (let o = 0; o < outDim; o++) y[yo + o] = bias[o];
    else y.fill(0, yo, yo + outDim);
  }
  if (weight instanceof Float32Array) matmulAdd(x, rows, inDim, weight, outDim, y);
  else q4MatmulAdd(x, rows, weight, y);
  if (!lora || !u) return;
  const r = lora.A.length / inDim;
  const { A, B } = lora;
  for (let t = 0; t < rows; t++) {
    const xo = t * inDim;
    for (let j = 0; j < r; j++) {
      let sum = 0;
      const ao = j * inDim;
      for (let i = 0; i < inDim; i++) sum += x[xo + i] * A[ao + i];
      u[t * r + j] = sum;
    }
    const yo = t * outDim;
    for (let o = 0; o < outDim; o++) {
      let sum = 0;
      const bo = o * r;
      for (let j = 0; j < r; j++) sum += u[t * r + j] * B[bo + j];
      y[yo + o] += scale * sum;
    }
  }
}

/**
 * From dy: dx += dy W^T + s (dy B) A, and into the adapter's gradient dB += s dy^T u,
 * dA += s (dy B)^T x. `du` is scratch of [rows, r].
 */
export function projectBackward(
  dy: Vec,
  x: Vec,
  u: Vec | undefined,
  rows: number,
  p: Projection,
  lora: LoraPair | undefined,
  grad: LoraPair | undefined,
  scale: number,
  dx: Vec,
  du: Vec,
): void {
  const { inDim, outDim, weight } = p;
  if (weight instanceof Float32Array) matmulTransposedAdd(dy, rows, outDim, weight, inDim, dx);
  else q4MatmulTransposedAdd(dy, rows, weight, dx);
  if (!lora || !u || !grad) return;
  const r = lora.A.length / inDim;
  const { A, B } = lora;
  for (let t = 0; t < rows; t++) {
    const yo = t * outDim;
    for (let j = 0; j < r; j++) du[t * r + j] = 0;
    for (let o = 0; o < outDim; o++) {
      const g = scale * dy[yo + o];
      if (g === 0) continue;
      const bo = o * r;
      for (let j = 0; j < r; j++) {
        grad.B[bo + j] += g * u[t * r + j];
        du[t * r + j] += g * B[bo + j];
      }
    }
    const xo = t * inDim;
    for (let j = 0; j < r; j++) {
      const d = du[t * r + j];
      if (d === 0) continue;
      const ao = j * inDim;
      for (let i = 0; i < inDim; i++) {
        grad.A[ao + i] += d * x[xo + i];
        dx[xo + i] += d * A[ao + i];
      }
    }
  }
}

/** RMSNorm over rows of n: y = x / sqrt(mean(x^2) + eps) * g; inv[t] = 1 / sqrt(...) is kept. */
export function rmsNormForward(x: Vec, rows: number, n: number, g: Float32Array, eps: number, y: Vec, inv: Vec): void {
  for (let t = 0; t < rows; t++) {
    const o = t * n;
    let sum = 0;
    for (let i = 0; i < n; i++) sum += x[o + i] * x[o + i];
    const r = 1 / Math.sqrt(sum / n + eps);
    inv[t] = r;
    for (let i = 0; i < n; i++) y[o + i] = x[o + i] * r * g[i];
  }
}

/** dx += r g dy - x r^3 / n * sum(dy g x); with `dg`, also the weight's gradient dg += sum over rows of dy x r. */
export function rmsNormBackward(dy: Vec, x: Vec, inv: Vec, rows: number, n: number, g: Float32Array, dx: Vec, dg?: Float32Array): void {
  for (let t = 0; t < rows; t++) {
    const o = t * n;
    const r = inv[t];
    let dot = 0;
    for (let i = 0; i < n; i++) dot += dy[o + i] * g[i] * x[o + i];
    const c = (r * r * r * dot) / n;
    for (let i = 0; i < n; i++) dx[o + i] += r * g[i] * dy[o + i] - c * x[o + i];
    if (dg) for (let i = 0; i < n; i++) dg[i] += dy[o + i] * x[o + i] * r;
  }
}

/**
 * Rotary tables for each row's position: cos and sin of position * inv_freq [rows, headDim / 2].
 * The angle is rounded to float32 as the ONNX graph (and transformers' float32 rotary) computes it,
 * so positions far from zero rotate by the same angle as in the session.
 */
export function ropeTables(positions: ArrayLike<number>, headDim: number, theta: number): { cos: Float64Array; sin: Float64Array } {
  const rows = positions.length;
  const half = headDim / 2;
  const cos = new Float64Array(rows * half);
  const sin = new Float64Array(rows * half);
  for (let i = 0; i < half; i++) {
    const invFreq = Math.fround(1 / theta ** ((2 * i) / headDim));
    for (let t = 0; t < rows; t++) {
      const angle = Math.fround(positions[t] * invFreq);
      cos[t * half + i] = Math.cos(angle);
      sin[t * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}

/**
 * In place on [rows, heads * headDim]: x * cos + rotate_half(x) * sin (rotated halves, as
 * transformers' Llama). `inverse` rotates back by the same angle, which is the backward pass.
 */
export function rope(x: Vec, rows: number, heads: number, headDim: number, cos: Float64Array, sin: Float64Array, inverse: boolean): void {
  const half = headDim / 2;
  const sign = inverse ? -1 : 1;
  for (let t = 0; t < rows; t++) {
    for (let h = 0; h < heads; h++) {
      const o = (t * heads + h) * headDim;
      for (let i = 0; i < half; i++) {
        const c = cos[t * half + i];
        const s = sign * sin[t * half + i];
        const a = x[o + i];
        const b = x[o + half + i];
        x[o + i] = a * c - b * s;
        x[o + half + i] = b * c + a * s;
      }
    }
  }
}

export interface AttentionShape {
  rows: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  /**
   * Rows [0, prefix) are a shared prompt; segment[i] is where row i's own sequence starts (0 for
   * prompt rows). Row i attends to the prompt and to its own sequence up to itself: keys
   * [0, min(prefix, segment[i])) and [segment[i], i]. A group of completions after one prompt is
   * then one matrix of rows, and the prompt is computed once.
   */
  prefix: number;
  segment: Int32Array;
}

/** The first key row i skips and the first it sees again (equal when nothing is skipped). */
function gap(s: AttentionShape, i: number): [number, number] {
  const start = s.segment[i];
  return [Math.min(s.prefix, start), start];
}

/**
 * Causal grouped-query attention: query head h reads key/value head floor(h / (heads / kvHeads)).
 * q [rows, heads * D], k and v [rows, kvHeads * D] -> ctx [rows, heads * D]; probs [heads, rows, rows]
 * (lower triangle) is kept for the backward.
 */
export function attentionForward(q: Vec, k: Vec, v: Vec, s: AttentionShape, probs: Vec, ctx: Vec): void {
  const { rows, heads, kvHeads, headDim: D } = s;
  const groups = heads / kvHeads;
  const scale = 1 / Math.sqrt(D);
  const qStride = heads * D;
  const kStride = kvHeads * D;
  ctx.fill(0, 0, rows * qStride);
  for (let h = 0; h < heads; h++) {
    const kvOff = Math.floor(h / groups) * D;
    for (let i = 0; i < rows; i++) {
      const qo = i * qStride + h * D;
      const po = (h * rows + i) * rows;
      const [skip, resume] = gap(s, i);
      let max = -Infinity;
      for (let j = 0; j <= i; j = j + 1 === skip ? resume : j + 1) {
        const ko = j * kStride + kvOff;
        let dot = 0;
        for (let d = 0; d < D; d++) dot += q[qo + d] * k[ko + d];
        const score = dot * scale;
        probs[po + j] = score;
        if (score > max) max = score;
      }
      let sum = 0;
      for (let j = 0; j <= i; j = j + 1 === skip ? resume : j + 1) {
        const e = Math.exp(probs[po + j] - max);
        probs[po + j] = e;
        sum += e;
      }
      for (let j = 0; j <= i; j = j + 1 === skip ? resume : j + 1) {
        const p = probs[po + j] / sum;
        probs[po + j] = p;
        const vo = j * kStride + kvOff;
        for (let d = 0; d < D; d++) ctx[qo + d] += p * v[vo + d];
      }
    }
  }
}

/** From dctx: dq, dk, dv (added into); `dp` is scratch of [rows]. */
export function attentionBackward(dctx: Vec, q: Vec, k: Vec, v: Vec, probs: Vec, s: AttentionShape, dq: Vec, dk: Vec, dv: Vec, dp: Float64Array): void {
  const { rows, heads, kvHeads, headDim: D } = s;
  const groups = heads / kvHeads;
  const scale = 1 / Math.sqrt(D);
  const qStride = heads * D;
  const kStride = kvHeads * D;
  for (let h = 0; h < heads; h++) {
    const kvOff = Math.floor(h / groups) * D;
    for (let i = 0; i < rows; i++) {
      const qo = i * qStride + h * D;
      const po = (h * rows + i) * rows;
      const [skip, resume] = gap(s, i);
      let weighted = 0;
      for (let j = 0; j <= i; j = j + 1 === skip ? resume : j + 1) {
        const vo = j * kStride + kvOff;
        let dot = 0;
        for (let d = 0; d < D; d++) dot += dctx[qo + d] * v[vo + d];
        dp[j] = dot;
        weighted += probs[po + j] * dot;
      }
      for (let j = 0; j <= i; j = j + 1 === skip ? resume : j + 1) {
        const p = probs[po + j];
        const ds = p * (dp[j] - weighted) * scale;
        const ko = j * kStride + kvOff;
        for (let d = 0; d < D; d++) {
          dq[qo + d] += ds * k[ko + d];
          dk[ko + d] += ds * q[qo + d];
          dv[ko + d] += p * dctx[qo + d];
        }
      }
    }
  }
}

/** act = silu(gate) * up. */
export function swigluForward(gate: Vec, up: Vec, n: number, act: Vec): void {
  for (let i = 0; i < n; i++) {
    const g = gate[i];
    act[i] = (g / (1 + Math.exp(-g))) * up[i];
  }
}

/** dgate = dact * up * silu'(gate), dup = dact * silu(gate) (written, not added). */
export function swigluBackward(dact: Vec, gate: Vec, up: Vec, n: number, dgate: Vec, dup: Vec): void {
  for (let i = 0; i < n; i++) {
    const g = gate[i];
    const sig = 1 / (1 + Math.exp(-g));
    dup[i] = dact[i] * g * sig;
    dgate[i] = dact[i] * up[i] * sig * (1 + g * (1 - sig));
  }
}
