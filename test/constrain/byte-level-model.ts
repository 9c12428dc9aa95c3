/**
 * A random-weight model with a byte-level BPE tokenizer (GPT-2's byte alphabet, a ByteLevel
 * pre-tokenizer and decoder, and merges whose tokens straddle JSON's structure, such as `":` and
 * `Ġ"`), built with scripts/build-model and its tokenizer.json replaced. Its 256 byte tokens can
 * write any UTF-8 text, so schemas with non-ASCII text run on it too.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildModel, type ModelSpec } from '../../scripts/build-model/index.js';
import { SPECIAL_TOKENS } from '../../scripts/build-model/tokenizer.js';

/** Pairs merged, in order (GPT-2 characters: Ġ is a space, Ċ a newline). */
const MERGES: Array<[string, string]> = [
  ['"', ':'],
  ['Ġ', '"'],
  ['{', '"'],
  ['"', ','],
  ['"', '}'],
  ['Ġ', 't'],
  ['e', 'r'],
  ['t', 'r'],
  ['tr', 'u'],
  ['tru', 'e'],
  ['Ġ', '['],
  [']', '}'],
  ['a', 'l'],
  ['n', 'u'],
  ['1', '2'],
  ['Ã', '©'],
  ['Ġ', 'Ġ'],
  ['Ċ', 'Ġ'],
];

const SPEC: ModelSpec = {
  seed: 31,
  hiddenSize: 64,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  intermediateSize: 128,
  tieWordEmbeddings: true,
  // 101 characters + 200 reserved = 301 columns: 6 specials, 256 bytes, the merges, and unused ones.
  reservedTokens: 200,
  ropeTheta: 10000,
  rmsNormEps: 1e-5,
  maxPositionEmbeddings: 512,
};

/** GPT-2's map from bytes to printable characters. */
function byteChars(): string[] {
  const printable = [...range(0x21, 0x7e), ...range(0xa1, 0xac), ...range(0xae, 0xff)];
  const chars: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) chars[b] = String.fromCharCode(printable.includes(b) ? b : 256 + extra++);
  return chars;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** The model in `dir` (default: a fresh temporary folder); returns the folder. */
/** Where browser tests find it: under the gitignored build/, which the test server serves. */
export const BYTE_LEVEL_MODEL_DIR = fileURLToPath(new URL('../../build/models/webgrpo-bytes', import.meta.url));
export const BYTE_LEVEL_MODEL_URL = '/build/models/webgrpo-bytes/';

export async function buildByteLevelModel(dir?: string): Promise<string> {
  dir ??= join(await mkdtemp(join(tmpdir(), 'webgrpo-bytes-')), 'model');
  await buildModel(SPEC, dir);
  const vocab = [...SPECIAL_TOKENS, ...byteChars(), ...MERGES.map(([a, b]) => a + b)];
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL_TOKENS.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(vocab.map((token, id) => [token, id])),
      merges: MERGES.map(([a, b]) => `${a} ${b}`),
    },
  };
  await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  return dir;
}
