import { describe, expect, it } from 'vitest';
import { byteLevelTokenBytes, sentencePieceTokenBytes } from '../../lib/method.js';

describe('token strings to bytes', () => {
  it("undoes GPT-2's byte-level mapping for all 256 bytes, partial UTF-8 included", () => {
    expect(Array.from(byteLevelTokenBytes('Ġhello')!)).toEqual(Array.from(new TextEncoder().encode(' hello')));
    expect(Array.from(byteLevelTokenBytes('Ã©')!)).toEqual([0xc3, 0xa9]);
    expect(Array.from(byteLevelTokenBytes('Ã')!)).toEqual([0xc3]);
    expect(Array.from(byteLevelTokenBytes('Ċ')!)).toEqual([0x0a]);
    // The table is a bijection between 256 characters and the 256 bytes.
    const seen = new Set<number>();
    for (let c = 0; c < 400; c++) {
      const b = byteLevelTokenBytes(String.fromCharCode(c));
      if (b) seen.add(b[0]);
    }
    expect(seen.size).toBe(256);
    expect(byteLevelTokenBytes('中')).toBeUndefined();
  });

  it('reads SentencePiece byte fallback and its space marker', () => {
    expect(Array.from(sentencePieceTokenBytes('<0x0A>'))).toEqual([0x0a]);
    expect(Array.from(sentencePieceTokenBytes('▁the'))).toEqual(Array.from(new TextEncoder().encode(' the')));
    expect(Array.from(sentencePieceTokenBytes('é'))).toEqual([0xc3, 0xa9]);
  });
});
