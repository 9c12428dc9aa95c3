/**
 * A pretraining run's checkpoint: the full-parameter engine's state (every weight, AdamW's two
 * moments, its update count), the next update's index (which also fixes the corpus position:
 * update `step` reads examples step x batch onwards) and the rows and seconds so far, in one
 * binary file. It is written to a temporary file and renamed, so a run stopped anywhere leaves
 * either the previous checkpoint or the new one whole, never half of one. `key` names the run
 * (config and corpus); a checkpoint of another run is refused rather than resumed.
 */
import { existsSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { InvalidInputError } from '../../lib/errors.js';
import type { FullEngineState } from '../../lib/train/full-engine.js';

export interface Checkpoint {
  /** What run this is (its config and corpus, as a string); a resume must match it. */
  key: string;
  /** Updates done: the next update's 0-based index. */
  step: number;
  rows: number;
  seconds: number;
  state: FullEngineState;
}

interface Header {
  key: string;
  step: number;
  rows: number;
  seconds: number;
  updates: number;
  /** Float32 lengths of the weights (the moments have the same). */
  lengths: number[];
}

const MAGIC = 'WGCK1';

export async function writeCheckpoint(file: string, c: Checkpoint): Promise<void> {
  const header: Header = { key: c.key, step: c.step, rows: c.rows, seconds: c.seconds, updates: c.state.updates, lengths: c.state.weights.map((w) => w.length) };
  const head = Buffer.from(`${MAGIC}${JSON.stringify(header)}\n`, 'utf8');
  // The tensors start on a 4-byte boundary so they can be read as Float32Array views.
  const pad = (4 - ((head.length + 4) % 4)) % 4;
  const tensors = [...c.state.weights, ...c.state.m, ...c.state.v];
  const size = tensors.reduce((n, t) => n + t.byteLength, 0);
  const out = Buffer.alloc(4 + head.length + pad + size);
  out.writeUInt32LE(head.length + pad, 0);
  head.copy(out, 4);
  out.fill(0x20, 4 + head.length, 4 + head.length + pad);
  let at = 4 + head.length + pad;
  for (const t of tensors) {
    Buffer.from(t.buffer, t.byteOffset, t.byteLength).copy(out, at);
    at += t.byteLength;
  }
  await writeFile(`${file}.tmp`, out);
  await rename(`${file}.tmp`, file);
}

/** The checkpoint in `file`, or undefined when there is none. */
export async function readCheckpoint(file: string): Promise<Checkpoint | undefined> {
  if (!existsSync(file)) return undefined;
  const bytes = await readFile(file);
  const bad = (why: string) => new InvalidInputError('checkpoint', `${file} is not a pretraining checkpoint (${why}); delete it to start the run again.`);
  if (bytes.length < 4) throw bad('too short');
  const headLength = bytes.readUInt32LE(0);
  const text = bytes.subarray(4, 4 + headLength).toString('utf8').trimEnd();
  if (!text.startsWith(MAGIC)) throw bad('no header');
  let header: Header;
  try {
    header = JSON.parse(text.slice(MAGIC.length)) as Header;
  } catch {
    throw bad('unreadable header');
  }
  const floats = header.lengths.reduce((n, l) => n + l, 0);
  const start = 4 + headLength;
  if (bytes.length !== start + 3 * floats * 4) throw bad(`${bytes.length} bytes, the header asks for ${start + 3 * floats * 4}`);
  // A copy, aligned, of the tensors' bytes.
  const all = new Float32Array(bytes.buffer.slice(bytes.byteOffset + start, bytes.byteOffset + bytes.length));
  let at = 0;
  const take = () =>
    header.lengths.map((l) => {
      const t = all.subarray(at, at + l);
      at += l;
      return t;
    });
  const weights = take();
  const m = take();
  const v = take();
  return { key: header.key, step: header.step, rows: header.rows, seconds: header.seconds, state: { weights, m, v, updates: header.updates } };
}

export async function removeCheckpoint(file: string): Promise<void> {
  await rm(file, { force: true });
}
