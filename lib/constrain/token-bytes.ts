/**
 * The bytes a token adds to the output, from the token strings tokenizers store. Byte-level BPE
 * (GPT-2, Llama 3, Qwen, SmolLM) writes every byte as one printable character (`Ġ` for a space,
 * `Ã©` for the two bytes of `é`); SentencePiece writes a leading space as `▁` and unencodable bytes
 * as `<0xAB>`. The matcher needs the raw bytes, partial UTF-8 characters included.
 */

const utf8 = new TextEncoder();

/** GPT-2's byte → character table, inverted: character code → byte. */
const BYTE_OF_CHAR: ReadonlyMap<number, number> = (() => {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const map = new Map<number, number>();
  for (const b of printable) map.set(b, b);
  // The other 68 bytes (controls, space, DEL, NBSP, soft hyphen) take characters 256, 257, ...
  let shifted = 0;
  for (let b = 0; b < 256; b++) if (!printable.includes(b)) map.set(256 + shifted++, b);
  return map;
})();

/** The bytes of a byte-level BPE token, or undefined when it is not one (a special token like `<|im_end|>` still maps; pass those as empty). */
export function byteLevelTokenBytes(token: string): Uint8Array | undefined {
  const out = new Uint8Array(token.length);
  for (let i = 0; i < token.length; i++) {
    const b = BYTE_OF_CHAR.get(token.charCodeAt(i));
    if (b === undefined) return undefined;
    out[i] = b;
  }
  return out;
}

/** The bytes of a SentencePiece token: `<0xAB>` is one raw byte, `▁` a space, the rest UTF-8. */
export function sentencePieceTokenBytes(token: string): Uint8Array {
  const byte = /^<0x([0-9A-Fa-f]{2})>$/.exec(token);
  if (byte) return Uint8Array.of(parseInt(byte[1], 16));
  return utf8.encode(token.replace(/\u2581/g, ' '));
}
