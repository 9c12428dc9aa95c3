/**
 * grpoLoss's batch validated (finite values, a 0/1 mask, matching shapes, what the config needs
 * present), with errors naming the argument, and the token counts the loss types divide by.
 */
import { InvalidInputError } from '../errors.js';
import type { ResolvedLossConfig } from './loss-config.js';
import { allFinite, describe, finiteNumber, isArrayLike, rowsShape, type Rows } from './validate.js';

/** The batch validated, its mask as flat 0/1 bytes, and the token counts every type divides by. */
export interface GrpoLossBatch {
  /** B rows of T: log p(token) under the policy being trained. */
  logps: Rows;
  /** B rows of T: log-probs under the policy of the previous update; default `logps`, detached (ratio 1). */
  oldLogps?: Rows;
  /** B rows of T: log-probs under the reference policy; required when `beta` is not 0. */
  refLogps?: Rows;
  /**
   * B rows of T: log-probs under the distribution each token was actually drawn from (filtered
   * or at another temperature); required by `importanceSampling`, and the off-policy mask's
   * sampling side when given (else `oldLogps`).
   */
  samplingLogps?: Rows;
  /** One advantage per row. */
  advantages: ArrayLike<number>;
  /** B rows of T, 1 for completion tokens that count, 0 for padding (booleans accepted). */
  mask: Rows<number | boolean>;
  /** B rows of T token entropies; required by `entropyCoef` and `topEntropyQuantile`. */
  entropies?: Rows;
  /**
   * TRL's num_items_in_batch, what cispo, dapo and vespo divide their loss and entropy bonus by;
   * default the mask's active tokens, which is TRL's count (taken after truncated completions
   * are masked). Pass the count over every micro-batch of an accumulation window to split one.
   */
  numItemsInBatch?: number;
}

export interface LossInputs {
  b: number;
  t: number;
  logps: Rows;
  old: Rows;
  ref: Rows | undefined;
  sampling: Rows | undefined;
  entropies: Rows | undefined;
  advantages: ArrayLike<number>;
  mask: Uint8Array;
  /** Active tokens per row. */
  lengths: Float64Array;
  active: number;
  activeOr1: number;
  numItemsOr1: number;
}

export function readBatch(batch: GrpoLossBatch, s: ResolvedLossConfig): LossInputs {
  if (batch === null || typeof batch !== 'object') {
    throw new InvalidInputError('batch', 'must be an object { logps, advantages, mask, ... }.');
  }
  const shape = rowsShape('logps', batch.logps);
  const [b, t] = shape;
  allFinite('logps', batch.logps);
  const logps = batch.logps;
  const old = optionalRows('oldLogps', batch.oldLogps, shape) ?? logps;
  const ref = optionalRows('refLogps', batch.refLogps, shape);
  if (s.beta !== 0 && !ref) {
    throw new InvalidInputError('refLogps', `is required when beta is ${s.beta}; pass the reference policy's log-probs or set beta to 0.`);
  }
  const sampling = optionalRows('samplingLogps', batch.samplingLogps, shape);
  if (s.importanceSampling && !sampling) {
    throw new InvalidInputError(
      'samplingLogps',
      `are required by importanceSampling (mode '${s.importanceSampling.mode}'); pass the log-probs under the distribution the tokens were drawn from.`,
    );
  }
  const entropies = optionalRows('entropies', batch.entropies, shape);
  if (s.entropyCoef !== 0 && !entropies) {
    throw new InvalidInputError('entropies', `are required when entropyCoef is ${s.entropyCoef}; pass per-token entropies or set entropyCoef to 0.`);
  }
  if (s.topEntropyQuantile < 1 && !entropies) {
    throw new InvalidInputError('entropies', `are required when topEntropyQuantile is ${s.topEntropyQuantile}; pass per-token entropies or set it to 1.`);
  }
  const advantages = readAdvantages(batch.advantages, b);
  const mask = readMask(batch.mask, shape);

  const lengths = new Float64Array(b);
  let active = 0;
  for (let i = 0; i < b; i++) {
    let n = 0;
    for (let j = 0; j < t; j++) n += mask[i * t + j];
    lengths[i] = n;
    active += n;
  }
  const numItems =
    batch.numItemsInBatch === undefined ? active : finiteNumber('numItemsInBatch', batch.numItemsInBatch, { min: 0 });
  return { b, t, logps, old, ref, sampling, entropies, advantages, mask, lengths, active, activeOr1: Math.max(active, 1), numItemsOr1: Math.max(numItems, 1) };
}

function optionalRows(argument: string, rows: Rows | undefined, shape: [number, number]): Rows | undefined {
  if (rows === undefined || rows === null) return undefined;
  rowsShape(argument, rows, shape);
  allFinite(argument, rows);
  return rows;
}

function readAdvantages(advantages: ArrayLike<number>, b: number): ArrayLike<number> {
  if (!isArrayLike(advantages) || advantages.length !== b) {
    throw new InvalidInputError('advantages', `must hold one value per row of logps (${b}), got ${describe(advantages)}${isArrayLike(advantages) ? ` of ${advantages.length}` : ''}.`);
  }
  for (let i = 0; i < b; i++) {
    if (typeof advantages[i] !== 'number' || !Number.isFinite(advantages[i])) {
      throw new InvalidInputError('advantages', `[${i}] is ${describe(advantages[i])}; advantages must be finite numbers.`);
    }
  }
  return advantages;
}

/** The mask as flat 0/1 bytes, row-major. */
function readMask(mask: Rows<number | boolean>, shape: [number, number]): Uint8Array {
  rowsShape('mask', mask, shape);
  const [b, t] = shape;
  const out = new Uint8Array(b * t);
  for (let i = 0; i < b; i++) {
    const row = mask[i];
    for (let j = 0; j < t; j++) {
      const m = row[j];
      if (m === 1 || m === true) out[i * t + j] = 1;
      else if (m !== 0 && m !== false) {
        throw new InvalidInputError('mask', `[${i}][${j}] is ${describe(m)}; the mask holds 0 or 1 per token.`);
      }
    }
  }
  return out;
}
