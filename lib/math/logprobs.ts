/**
 * Per-token log-probabilities and entropies from raw logits: TRL's `selective_log_softmax` and
 * `entropy_from_logits` applied to `logits / temperature` (grpo_trainer.py divides the logits by
 * the sampling temperature before both). Computed in float64 one vocabulary row at a time, with
 * no temporaries at all: a B*T*V tensor is read twice and never copied.
 */
import { InvalidInputError } from '../errors.js';
import { describe, finiteNumber, integerAtLeast, isArrayLike } from './validate.js';

export interface TokenLogProbsInput {
  /** B*T*V logits, row-major: batch, then position, then vocabulary. */
  logits: Float32Array | Float64Array | ArrayLike<number>;
  /** [B, T, V]. */
  dims: readonly [number, number, number] | readonly number[];
  /** B*T token ids (the token whose probability is read at each position), flat or as B rows of T. */
  ids: ArrayLike<number> | BigInt64Array | BigUint64Array | readonly ArrayLike<number>[];
  /** Logits are divided by this before the softmax; default 1. */
  temperature?: number;
}

export interface TokenLogProbs {
  /** B*T values: log p(ids[i]) under softmax(logits / temperature). */
  logps: Float64Array;
  /** B*T values: entropy (nats) of softmax(logits / temperature). */
  entropy: Float64Array;
}

/** Per-token log-probs and entropies of softmax(logits / temperature) for the given token ids, B*T of each. */
export function tokenLogProbs(input: TokenLogProbsInput): TokenLogProbs {
  if (input === null || typeof input !== 'object') {
    throw new InvalidInputError('input', 'must be an object { logits, dims, ids, temperature? }.');
  }
  const { logits, dims } = input;
  if (!isArrayLike(dims) || dims.length !== 3) {
    throw new InvalidInputError('dims', `must be [B, T, V], got ${describe(dims)}.`);
  }
  const b = integerAtLeast('dims', dims[0], 1);
  const t = integerAtLeast('dims', dims[1], 1);
  const v = integerAtLeast('dims', dims[2], 1);
  const rows = b * t;
  if (!isArrayLike(logits) || logits.length !== rows * v) {
    throw new InvalidInputError('logits', `must hold B*T*V = ${b}*${t}*${v} = ${rows * v} values, got ${describe(logits)}${isArrayLike(logits) ? ` of ${logits.length}` : ''}.`);
  }
  const ids = flatIds(input.ids, b, t);
  if (!isArrayLike(ids) || ids.length !== rows) {
    throw new InvalidInputError('ids', `must hold B*T = ${rows} token ids, got ${describe(ids)}${isArrayLike(ids) ? ` of ${ids.length}` : ''}.`);
  }
  const temperature = finiteNumber('temperature', input.temperature ?? 1, { above: 0 });
  const invT = 1 / temperature;
  const x = logits as ArrayLike<number>;

  const logps = new Float64Array(rows);
  const entropy = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const id = Number(ids[r]);
    if (!Number.isInteger(id) || id < 0 || id >= v) {
      throw new InvalidInputError('ids', `[${r}] is ${describe(ids[r])}; token ids must be integers in [0, ${v}).`);
    }
    const base = r * v;
    // The maximum of x is the maximum of x / T (T > 0), so the shift needs no division.
    let max = -Infinity;
    for (let j = base; j < base + v; j++) if (x[j] > max) max = x[j];
    // sum e_j and sum e_j * d_j, with d_j = (x_j - max) / T and e_j = exp(d_j), give
    // log Z = log(sum e) (shifted) and H = log Z - sum(p_j * d_j). Terms with e_j = 0 come from
    // -Infinity logits (masked vocabulary); they add nothing, while 0 * -Infinity would be NaN.
    let sum = 0;
    let weighted = 0;
    for (let j = base; j < base + v; j++) {
      const d = (x[j] - max) * invT;
      const e = Math.exp(d);
      sum += e;
      weighted += e === 0 ? 0 : e * d;
    }
    const logZ = Math.log(sum);
    if (!Number.isFinite(logZ) || !Number.isFinite(max)) {
      throw new InvalidInputError('logits', `row ${r} (batch ${Math.floor(r / t)}, position ${r % t}) contains NaN or infinite logits, or is all -Infinity.`);
    }
    logps[r] = (x[base + id] - max) * invT - logZ;
    entropy[r] = logZ - weighted / sum;
  }
  return { logps, entropy };
}

/** Accepts ids as B rows of T by flattening them (one small B*T copy). */
function flatIds(ids: TokenLogProbsInput['ids'], b: number, t: number): ArrayLike<number> | BigInt64Array | BigUint64Array {
  if (!isArrayLike(ids) || ids.length === 0 || !isArrayLike(ids[0])) return ids as ArrayLike<number>;
  const rows = ids as readonly ArrayLike<number>[];
  if (rows.length !== b || rows.some((row) => !isArrayLike(row) || row.length !== t)) {
    throw new InvalidInputError('ids', `given as rows, must be ${b} rows of ${t} token ids.`);
  }
  const flat = new Array<number>(b * t);
  for (let i = 0; i < b; i++) for (let j = 0; j < t; j++) flat[i * t + j] = Number(rows[i][j]);
  return flat;
}
