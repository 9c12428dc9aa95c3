/**
 * `@mlc-ai/web-xgrammar` (xgrammar's C++ core built to WebAssembly, what WebLLM uses) in Node, for
 * the side-by-side benchmark. The package is a UMD bundle of an Emscripten module published as an
 * ES module: in Node it needs `require` and `__filename` in scope, and it leaves its exports on
 * `globalThis.xgrammar`. The WebAssembly is inlined, so nothing is fetched.
 */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type * as Xgrammar from '@mlc-ai/web-xgrammar';
import type { TestVocabulary } from '../../test/fixtures/vocabularies.js';

export type Xg = typeof Xgrammar;

export async function loadXgrammar(): Promise<Xg> {
  const require = createRequire(import.meta.url);
  const file = require.resolve('@mlc-ai/web-xgrammar');
  Object.assign(globalThis, { require, __filename: file, __dirname: dirname(file) });
  await import('@mlc-ai/web-xgrammar');
  return (globalThis as unknown as { xgrammar: Xg }).xgrammar;
}

/** GPT-2's byte → printable character table (what `byte_level` vocabularies store). */
const CHAR_OF_BYTE: string[] = (() => {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const out: string[] = [];
  let shifted = 0;
  for (let b = 0; b < 256; b++) out[b] = String.fromCharCode(printable(b) ? b : 256 + shifted++);
  return out;
})();

/** xgrammar's tokenizer info for a test vocabulary: tokens as byte-level strings, byte-less ones as special tokens. */
export async function tokenizerInfo(xg: Xg, tv: TestVocabulary): Promise<Xgrammar.TokenizerInfo> {
  const encoded = tv.bytes.map((bytes, id) => (bytes.length === 0 ? `<|special_${id}|>` : Array.from(bytes, (b) => CHAR_OF_BYTE[b]).join('')));
  return xg.TokenizerInfo.createTokenizerInfo(encoded, 'byte_level', false, encoded.length, tv.eosIds);
}
