/**
 * The bytes each logits column writes, read from a tokenizer.json, for the constrained-decoding
 * matcher (lib/constrain). Byte-level BPE tokens (a `ByteLevel` decoder or pre-tokenizer)
 * map through GPT-2's byte table, SentencePiece ones (`ByteFallback` / `Metaspace` decoders)
 * through `▁` and `<0xAB>`, and any other tokenizer (the bundled character one) writes the UTF-8
 * of its token text. Special tokens, and columns past the vocabulary, write nothing.
 */
import { byteLevelTokenBytes, sentencePieceTokenBytes } from '../../constrain/token-bytes.js';

interface TokenizerJson {
  model?: { vocab?: Record<string, number> | [string, number][] };
  added_tokens?: { id: number; content: string; special?: boolean }[];
  decoder?: unknown;
  pre_tokenizer?: unknown;
}

const utf8 = new TextEncoder();

export function tokenBytesTable(json: unknown, vocabSize: number): Uint8Array[] {
  const tokenizer = (json ?? {}) as TokenizerJson;
  const style = tokenStyle(tokenizer);
  const table: Uint8Array[] = Array.from({ length: vocabSize }, () => new Uint8Array(0));
  const vocab = tokenizer.model?.vocab ?? {};
  // Unigram models list [piece, score] pairs in id order; BPE and WordPiece map piece -> id.
  const entries: [string, number][] = Array.isArray(vocab) ? vocab.map(([piece], id) => [piece, id]) : Object.entries(vocab);
  for (const [token, id] of entries) {
    if (!(Number.isInteger(id) && id >= 0 && id < vocabSize)) continue;
    table[id] = style === 'byte-level' ? (byteLevelTokenBytes(token) ?? new Uint8Array(0)) : style === 'sentencepiece' ? sentencePieceTokenBytes(token) : utf8.encode(token);
  }
  for (const added of tokenizer.added_tokens ?? []) {
    if (!(Number.isInteger(added.id) && added.id >= 0 && added.id < vocabSize)) continue;
    table[added.id] = added.special === false ? utf8.encode(added.content) : new Uint8Array(0);
  }
  return table;
}

function tokenStyle(tokenizer: TokenizerJson): 'byte-level' | 'sentencepiece' | 'text' {
  const types = [...componentTypes(tokenizer.decoder), ...componentTypes(tokenizer.pre_tokenizer)];
  if (types.includes('ByteLevel')) return 'byte-level';
  if (types.includes('ByteFallback') || types.includes('Metaspace')) return 'sentencepiece';
  return 'text';
}

/** The `type` of a tokenizer.json component and of the parts of a `Sequence`. */
function componentTypes(component: unknown): string[] {
  if (typeof component !== 'object' || component === null) return [];
  const { type, decoders, pretokenizers } = component as { type?: unknown; decoders?: unknown; pretokenizers?: unknown };
  const parts = [decoders, pretokenizers].flatMap((list) => (Array.isArray(list) ? list.flatMap(componentTypes) : []));
  return typeof type === 'string' ? [type, ...parts] : parts;
}
