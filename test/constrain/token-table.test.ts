import { describe, expect, it } from 'vitest';
import { tokenBytesTable } from '../../lib/policy/onnx/token-table.js';

const text = (b: Uint8Array) => Array.from(b);

describe('tokenBytesTable', () => {
  it('byte-level BPE: GPT-2 characters back to bytes, special tokens empty, padding columns empty', () => {
    const json = {
      model: { type: 'BPE', vocab: { a: 0, 'Ġb': 1, 'Ã©': 2 } },
      added_tokens: [{ id: 3, content: '<|endoftext|>', special: true }],
      decoder: { type: 'ByteLevel' },
    };
    const table = tokenBytesTable(json, 5);
    expect(table.map(text)).toEqual([[0x61], [0x20, 0x62], [0xc3, 0xa9], [], []]);
  });

  it('SentencePiece through a Sequence decoder, and plain text otherwise', () => {
    const sp = { model: { vocab: { '▁a': 0, '<0x0A>': 1 } }, decoder: { type: 'Sequence', decoders: [{ type: 'ByteFallback' }, { type: 'Fuse' }] } };
    expect(tokenBytesTable(sp, 2).map(text)).toEqual([[0x20, 0x61], [0x0a]]);
    const chars = { model: { vocab: { é: 0, x: 1 } }, added_tokens: [{ id: 2, content: 'NL', special: false }], decoder: { type: 'Fuse' } };
    expect(tokenBytesTable(chars, 3).map(text)).toEqual([[0xc3, 0xa9], [0x78], [0x4e, 0x4c]]);
  });
});
