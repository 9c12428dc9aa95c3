/**
 * Log-probability and entropy of one row of logits under softmax(logits / temperature), in
 * float64. Temperature 0 (greedy decoding) is scored at temperature 1, matching the `logprob`
 * that `sampleToken` reports for greedy tokens.
 */
export interface TokenScore {
  logprob: number;
  entropy: number;
}

export function scoreToken(
  logits: ArrayLike<number>,
  offset: number,
  vocabSize: number,
  tokenId: number,
  temperature: number,
): TokenScore {
  const inverseT = temperature > 0 ? 1 / temperature : 1;
  let max = -Infinity;
  for (let i = 0; i < vocabSize; i++) max = Math.max(max, logits[offset + i] * inverseT);
  // With e_i = exp(z_i - max) and S = sum e_i: log p_t = (z_t - max) - log S and
  // H = -sum p_i log p_i = log S - sum e_i (z_i - max) / S.
  let total = 0;
  let weighted = 0;
  for (let i = 0; i < vocabSize; i++) {
    const shifted = logits[offset + i] * inverseT - max;
    const e = Math.exp(shifted);
    total += e;
    weighted += e * shifted;
  }
  const logTotal = Math.log(total);
  return {
    logprob: logits[offset + tokenId] * inverseT - max - logTotal,
    entropy: logTotal - weighted / total,
  };
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
