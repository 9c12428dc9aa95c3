/**
 * Log-probability and entropy of one row of logits under softmax(logits / temperature): the math
 * core's `tokenLogProbs` on a view of the row. Temperature 0 (greedy decoding) is scored at
 * temperature 1, matching the `logprob` that `sampleToken` reports for greedy tokens.
 */
import { tokenLogProbs } from '../math/logprobs.js';

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
