/**
 * A constrained row's allowed tokens at one step: the matcher's mask, narrowed near the end of the
 * token budget to the tokens after which the output can still be completed in the tokens left
 * (counting one byte per token, which the single-byte tokens of a JSON grammar's ASCII always
 * allow), so a long answer is closed in time instead of cut off at `maxNewTokens`.
 */
import type { TokenMatcher } from '../../constrain/matcher.js';
import type { TokenVocabulary } from '../../constrain/vocabulary.js';

export function rowMask(matcher: TokenMatcher, vocabulary: TokenVocabulary, tokensLeft: number): Uint32Array {
  const mask = matcher.allowed();
  // Far from the budget no single token can make completion impossible.
  if (matcher.minBytesToComplete() + vocabulary.maxLength < tokensLeft) return mask;
  const narrowed = new Uint32Array(mask.length);
  let any = false;
  for (let w = 0; w < mask.length; w++) {
    let bits = mask[w];
    while (bits !== 0) {
      const bit = 31 - Math.clz32(bits);
      bits &= ~(1 << bit);
      const id = w * 32 + bit;
      if (vocabulary.isEos(id)) {
        narrowed[w] |= 1 << bit;
        any = true;
        continue;
      }
      const after = matcher.clone();
      after.accept(id);
      if (after.minBytesToComplete() <= tokensLeft - 1) {
        narrowed[w] |= 1 << bit;
        any = true;
      }
    }
  }
  // Nothing completes in time: the row keeps the grammar's own mask and ends at the budget.
  return any ? narrowed : mask;
}
