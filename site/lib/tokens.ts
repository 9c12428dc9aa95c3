/**
 * The text of each sampled token, so a completion can be drawn token by token. Tokens are decoded
 * one by one when that reproduces the whole text (character and byte-level BPE tokenizers); else
 * the text is cut at the ends of growing prefixes, and tokens that only make sense together (a
 * character split over several byte tokens) share one piece.
 */

export interface TokenPiece {
  text: string;
  /** Summed log-prob of the tokens in the piece. */
  logprob: number;
  tokens: number;
}

export type Decode = (tokenIds: number[]) => Promise<string>;

export async function tokenPieces(decode: Decode, tokenIds: readonly number[], logprobs: readonly number[]): Promise<TokenPiece[]> {
  const whole = await decode([...tokenIds]);
  const singles = await Promise.all(tokenIds.map((id) => decode([id])));
  if (singles.join('') === whole && !singles.some((s) => s.includes('\uFFFD'))) {
    return singles.map((text, i) => ({ text, logprob: logprobs[i], tokens: 1 }));
  }
  const pieces: TokenPiece[] = [];
  let shown = '';
  let pending = { logprob: 0, tokens: 0 };
  for (let i = 0; i < tokenIds.length; i++) {
    pending = { logprob: pending.logprob + logprobs[i], tokens: pending.tokens + 1 };
    const text = await decode(tokenIds.slice(0, i + 1));
    if (text.endsWith('\uFFFD') && i < tokenIds.length - 1) continue;
    if (!text.startsWith(shown)) continue;
    pieces.push({ text: text.slice(shown.length), ...pending });
    shown = text;
    pending = { logprob: 0, tokens: 0 };
  }
  if (pending.tokens > 0) pieces.push({ text: whole.slice(shown.length), ...pending });
  return pieces;
}

/** Pieces of a completion that carries no token ids (hosted APIs): the text, without shading. */
export function plainPieces(text: string): TokenPiece[] {
  return [{ text, logprob: Number.NaN, tokens: 0 }];
}
