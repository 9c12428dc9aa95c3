/**
 * Applying an allowed-token bitset (one bit per token id, bit `id & 31` of word `id >>> 5`) to a
 * row of logits. Masking happens before temperature filters (top-k / top-p / min-p) so they choose
 * among allowed tokens only; the log-prob of the distribution a token was drawn from is then the
 * log-softmax over the allowed tokens, which `maskedLogSoftmax` computes.
 */
import { InvalidInputError } from '../errors.js';

type Row = { [index: number]: number; readonly length: number };

/** Whether the allowed-token bitset lets `tokenId` through (bit `id & 31` of word `id >>> 5`). */
export function isAllowed(mask: Uint32Array, tokenId: number): boolean {
  return ((mask[tokenId >>> 5] >>> (tokenId & 31)) & 1) === 1;
}

/** How many of the first `vocabSize` tokens the mask allows. */
export function countAllowed(mask: Uint32Array, vocabSize: number): number {
  let count = 0;
  for (let id = 0; id < vocabSize; id++) count += (mask[id >>> 5] >>> (id & 31)) & 1;
  return count;
}

/** Sets the disallowed entries of `logits[offset .. offset + vocabSize)` to -Infinity, in place. */
export function applyTokenMask(logits: Row, offset: number, vocabSize: number, mask: Uint32Array): void {
  checkMask(mask, vocabSize);
  for (let w = 0; w * 32 < vocabSize; w++) {
    const bits = mask[w];
    if (bits === 0xffffffff) continue;
    const end = Math.min(32, vocabSize - w * 32);
    for (let b = 0; b < end; b++) if (((bits >>> b) & 1) === 0) logits[offset + w * 32 + b] = -Infinity;
  }
}

/**
 * log Σ exp(row[i]) over the allowed tokens: subtract it from an allowed token's logit (or its
 * unconstrained log-prob: the difference does not depend on the shift) to get its log-prob under
 * the constraint.
 */
export function maskedLogSumExp(row: ArrayLike<number>, offset: number, vocabSize: number, mask: Uint32Array): number {
  checkMask(mask, vocabSize);
  let max = -Infinity;
  for (let id = 0; id < vocabSize; id++) if (isAllowed(mask, id) && row[offset + id] > max) max = row[offset + id];
  if (max === -Infinity) return -Infinity;
  let total = 0;
  for (let id = 0; id < vocabSize; id++) if (isAllowed(mask, id)) total += Math.exp(row[offset + id] - max);
  return max + Math.log(total);
}

/**
 * Log-probs renormalised over the allowed tokens (-Infinity elsewhere), from logits or from
 * unconstrained log-probs alike.
 */
export function maskedLogSoftmax(
  row: ArrayLike<number>,
  offset: number,
  vocabSize: number,
  mask: Uint32Array,
  out: Float64Array = new Float64Array(vocabSize),
): Float64Array {
  const lse = maskedLogSumExp(row, offset, vocabSize, mask);
  for (let id = 0; id < vocabSize; id++) out[id] = isAllowed(mask, id) ? row[offset + id] - lse : -Infinity;
  return out;
}

function checkMask(mask: Uint32Array, vocabSize: number): void {
  if (mask.length * 32 < vocabSize) {
    throw new InvalidInputError('mask', `has ${mask.length * 32} bits, fewer than the ${vocabSize} tokens of the row.`);
  }
}
