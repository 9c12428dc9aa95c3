/**
 * A low-rank adapter on the language-model head: for a position with final hidden state h (d
 * values) and base logits z (V values),
 *
 *   z' = z + scale * (h A) B,      A: d x r,  B: r x V   (row-major float32)
 *
 * Sampling and scoring use z'; the frozen base model (B = 0, or no adapter) is the reference.
 * This file holds the host-memory arithmetic that the CPU/WASM policy and the CPU trainer share,
 * so both compute z' bit for bit the same way. The WebGPU forms live next to their kernels.
 */

export interface HeadAdapterWeights {
  readonly hiddenSize: number;
  readonly vocabSize: number;
  readonly rank: number;
  readonly scale: number;
  /** d x r, row-major. */
  readonly a: Float32Array;
  /** r x V, row-major. */
  readonly b: Float32Array;
}

/**
 * Writes u = scale * (h A) (r values, float64) for the hidden row at `h[hOffset ..]`. Folding the
 * scale into u keeps z' = z + u B.
 */
export function adapterInput(h: ArrayLike<number>, hOffset: number, w: HeadAdapterWeights, u: Float64Array): void {
  const { hiddenSize: d, rank: r, a } = w;
  u.fill(0, 0, r);
  for (let i = 0; i < d; i++) {
    const hi = h[hOffset + i];
    if (hi === 0) continue;
    const row = i * r;
    for (let k = 0; k < r; k++) u[k] += hi * a[row + k];
  }
  for (let k = 0; k < r; k++) u[k] *= w.scale;
}

/**
 * The adapted row z' = z + u B as float32, into `out[0 .. V)`. `acc` is float64 scratch of V.
 * Summing over k in order, then adding z once, fixes the rounding: every caller gets the same z'.
 */
export function adaptedRow(z: ArrayLike<number>, zOffset: number, u: Float64Array, w: HeadAdapterWeights, acc: Float64Array, out: Float32Array): void {
  const { vocabSize: v, rank: r, b } = w;
  acc.fill(0, 0, v);
  for (let k = 0; k < r; k++) {
    const uk = u[k];
    if (uk === 0) continue;
    const row = k * v;
    for (let j = 0; j < v; j++) acc[j] += uk * b[row + j];
  }
  for (let j = 0; j < v; j++) out[j] = z[zOffset + j] + acc[j];
}
