/**
 * How a batch of groups enters the training graphs (lora-graph.ts): one batch row per group, its
 * prompt once and every completion after it, as the scoring pass runs the prompt once, so the
 * same tokens cost the same; the rotary tables and the attention bias that let a row hold several
 * completions; and the scored tokens in slot order (group by group, completion by completion).
 */
import { InvalidInputError } from '../../errors.js';
import type { DecoderShape } from '../../weights/decoder.js';
import { ropeInvFreq } from '../../policy/onnx/structure/rope.js';
import type { Precision } from './builder.js';
import { GRAPH_IO } from './lora-graph.js';
import type { GraphGroup } from './rows.js';
import type { GraphRuntime, GraphTensor } from './runtime.js';

export type { GraphGroup } from './rows.js';

/** A large negative bias rather than -Infinity: a fully masked row can never appear, and the sums stay finite. */
const MASKED = -3.4028234663852886e38;

export function floatTensor(runtime: GraphRuntime, precision: Precision, values: ArrayLike<number>, dims: number[]): GraphTensor {
  return precision === 'float64'
    ? new runtime.Tensor('float64', Float64Array.from(values), dims)
    : new runtime.Tensor('float32', values instanceof Float32Array ? values : Float32Array.from(values), dims);
}

/** The graphs' token, position, mask, scored-row and temperature inputs for `batch`. */
export function batchInputs(runtime: GraphRuntime, precision: Precision, shape: DecoderShape, batch: Batch, invTemperature: number): Record<string, GraphTensor> {
  const { rows, width } = batch;
  const D = shape.headDim;
  const invFreq = ropeInvFreq(shape);
  const cos = new Float64Array(rows * width * D);
  const sin = new Float64Array(rows * width * D);
  batch.positions.forEach((p, at) => {
    for (let i = 0; i < D / 2; i++) {
      const angle = p * invFreq[i];
      cos[at * D + i] = cos[at * D + i + D / 2] = Math.cos(angle);
      sin[at * D + i] = sin[at * D + i + D / 2] = Math.sin(angle);
    }
  });
  const floats = (values: ArrayLike<number>, dims: number[]) => floatTensor(runtime, precision, values, dims);
  const int64 = (values: ArrayLike<number>, dims: number[]) => new runtime.Tensor('int64', BigInt64Array.from(Array.from(values), BigInt), dims);
  return {
    [GRAPH_IO.inputIds]: int64(batch.ids, [rows, width]),
    [GRAPH_IO.cos]: floats(cos, [rows, 1, width, D]),
    [GRAPH_IO.sin]: floats(sin, [rows, 1, width, D]),
    [GRAPH_IO.bias]: floats(batch.bias, [rows, 1, width, width]),
    [GRAPH_IO.rows]: int64(batch.scoreRows, [batch.scored]),
    [GRAPH_IO.targets]: int64(batch.targets, [batch.scored]),
    [GRAPH_IO.invTemperature]: floats([invTemperature], []),
  };
}

export interface Batch {
  rows: number;
  width: number;
  ids: number[];
  /** Per row and column: the token's position (its rotary angle). */
  positions: number[];
  /** [rows, width, width]: 0 where a query may attend a key, MASKED elsewhere. */
  bias: Float64Array;
  scored: number;
  scoreRows: number[];
  targets: number[];
  /** Per completion: its first scored entry and its token count. */
  offsets: number[];
  lengths: number[];
}

/**
 * One row per group: the prompt once, then each completion but its last token (which is only a
 * target). A completion's tokens see the prompt and their own earlier tokens, at positions that
 * continue the prompt's, exactly as when scored alone; the prompt's last row predicts every
 * completion's first token.
 */
export function layout(groups: readonly GraphGroup[], vocabSize: number): Batch {
  checkGroups(groups, vocabSize);
  const rows = groups.map((group) => {
    const P = group.promptIds.length;
    const ids = [...group.promptIds];
    const positions = ids.map((_, i) => i);
    // -1: the prompt, seen by every completion; c: completion c's own tokens.
    const segment = ids.map(() => -1);
    const picks: Array<{ column: number; target: number }> = [];
    group.completions.forEach((completion: readonly number[], c: number) => {
      picks.push({ column: P - 1, target: completion[0] });
      for (let j = 0; j + 1 < completion.length; j++) {
        ids.push(completion[j]);
        positions.push(P + j);
        segment.push(c);
        picks.push({ column: ids.length - 1, target: completion[j + 1] });
      }
    });
    return { ids, positions, segment, picks, lengths: group.completions.map((c: readonly number[]) => c.length) };
  });
  const width = Math.max(...rows.map((r) => r.ids.length));
  const batch: Batch = { rows: rows.length, width, ids: [], positions: [], bias: new Float64Array(rows.length * width * width).fill(MASKED), scored: 0, scoreRows: [], targets: [], offsets: [], lengths: [] };
  rows.forEach((row, b) => {
    const n = row.ids.length;
    for (let i = 0; i < width; i++) {
      batch.ids.push(i < n ? row.ids[i] : row.ids[n - 1]);
      batch.positions.push(i < n ? row.positions[i] : 0);
      const at = (b * width + i) * width;
      // A padding column attends only to itself: its softmax stays finite and nothing reads it.
      if (i >= n) batch.bias[at + i] = 0;
      else for (let j = 0; j <= i; j++) if (row.segment[j] === -1 || row.segment[j] === row.segment[i]) batch.bias[at + j] = 0;
    }
    let pick = 0;
    for (const length of row.lengths) {
      batch.offsets.push(batch.targets.length);
      batch.lengths.push(length);
      for (let t = 0; t < length; t++, pick++) {
        batch.scoreRows.push(b * width + row.picks[pick].column);
        batch.targets.push(row.picks[pick].target);
      }
    }
  });
  batch.scored = batch.targets.length;
  return batch;
}

/** Throws InvalidInputError unless every group has a prompt and non-empty completions of in-vocabulary tokens. */
export function checkGroups(groups: readonly GraphGroup[], vocabSize: number): void {
  if (!Array.isArray(groups) || groups.length === 0) throw new InvalidInputError('groups', 'must be a non-empty array of { promptIds, completions }.');
  groups.forEach((group, g) => {
    if (group.promptIds.length === 0) throw new InvalidInputError(`groups[${g}].promptIds`, 'needs at least one token.');
    const check = (t: number) => {
      if (!Number.isInteger(t) || t < 0 || t >= vocabSize) throw new InvalidInputError(`groups[${g}]`, `has token ${t}, outside the vocabulary of ${vocabSize}.`);
    };
    group.promptIds.forEach(check);
    group.completions.forEach((completion: readonly number[], c: number) => {
      if (completion.length === 0) throw new InvalidInputError(`groups[${g}].completions[${c}]`, 'is empty; drop empty completions before training.');
      completion.forEach(check);
    });
  });
}

/** Per completion (groups flattened in order): its first slot and its token count. */
export function slotsOf(groups: readonly GraphGroup[]): { offsets: number[]; lengths: number[]; scored: number } {
  const lengths = groups.flatMap((g) => g.completions.map((c) => c.length));
  const offsets: number[] = [];
  let scored = 0;
  for (const n of lengths) {
    offsets.push(scored);
    scored += n;
  }
  return { offsets, lengths, scored };
}

export function gather(values: ReadonlyArray<ArrayLike<number>>, batch: Pick<Batch, 'lengths' | 'offsets' | 'scored'>, what: string): Float64Array {
  if (values.length !== batch.lengths.length) throw new InvalidInputError(what, `has ${values.length} rows for ${batch.lengths.length} completions.`);
  const out = new Float64Array(batch.scored);
  batch.lengths.forEach((n, c) => {
    if (values[c].length !== n) throw new InvalidInputError(`${what}[${c}]`, `has ${values[c].length} entries for ${n} completion tokens.`);
    for (let t = 0; t < n; t++) out[batch.offsets[c] + t] = values[c][t];
  });
  return out;
}

