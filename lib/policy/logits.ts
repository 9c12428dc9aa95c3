/**
 * Log-probability and entropy of one row of logits under softmax(logits / temperature): the math
 * core's `tokenLogProbs` on a view of the row. Temperature 0 (greedy decoding) is scored at
 * temperature 1, matching the `logprob` that `sampleToken` reports for greedy tokens.
 */
import { tokenLogProbs } from '../math/logprobs.js';
import type { TopLogprob } from '../core/policy.js';

/** The most alternatives a caller may ask for per token (OpenAI's limit). */
export const MAX_TOP_LOGPROBS = 20;

export interface TokenScore {
  logprob: number;
  entropy: number;
}

export function scoreToken(logits: Float32Array, offset: number, vocabSize: number, tokenId: number, temperature: number): TokenScore {
  const { logps, entropy } = tokenLogProbs({
    logits: logits.subarray(offset, offset + vocabSize),
    dims: [1, 1, vocabSize],
    ids: [tokenId],
    temperature: temperature > 0 ? temperature : 1,
  });
  return { logprob: logps[0], entropy: entropy[0] };
}

/**
 * The k most likely tokens of one row under softmax(logits / temperature) (temperature 0 at 1, as
 * for greedy tokens), most likely first, ties in vocabulary order: OpenAI's `top_logprobs`. Each
 * log-prob is computed exactly as sampleToken computes the sampled token's, so a sampled token that
 * is among them carries the same number.
 */
export function topLogprobs(logits: ArrayLike<number>, offset: number, vocabSize: number, k: number, temperature: number): TopLogprob[] {
  const inverseT = temperature > 0 ? 1 / temperature : 1;
  const count = Math.min(k, vocabSize);
  const ids: number[] = [];
  const values: number[] = [];
  let max = -Infinity;
  for (let i = 0; i < vocabSize; i++) {
    const z = logits[offset + i] * inverseT;
    if (z > max) max = z;
    if (ids.length === count && !(z > values[count - 1])) continue;
    // Insert after every value >= z, so equal values stay in vocabulary order.
    let at = ids.length === count ? count - 1 : ids.length;
    while (at > 0 && values[at - 1] < z) {
      if (at < count) {
        values[at] = values[at - 1];
        ids[at] = ids[at - 1];
      }
      at--;
    }
    values[at] = z;
    ids[at] = i;
  }
  let total = 0;
  for (let i = 0; i < vocabSize; i++) total += Math.exp(logits[offset + i] * inverseT - max);
  const logTotal = Math.log(total);
  return ids.map((tokenId, j) => ({ tokenId, logprob: values[j] - max - logTotal }));
}

/** float16 bit patterns (as onnxruntime returns them) to float32. */
export function halfToFloat(bits: ArrayLike<number>, offset: number, length: number): Float32Array {
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) {
    const h = bits[offset + i];
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const fraction = h & 0x3ff;
    out[i] =
      exponent === 0
        ? sign * 2 ** -14 * (fraction / 1024)
        : exponent === 0x1f
          ? fraction
            ? NaN
            : sign * Infinity
          : sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
  }
  return out;
}
