/**
 * How a batch of groups is cut into the rows and micro-batches the training graphs run: plain
 * arithmetic on token counts, shared by the engine and the memory estimate (lib/train/memory.ts).
 */
import type { DecoderShape } from '../../weights/decoder.js';

/** A prompt and its completions (token ids); the prompt has at least one token. */
export interface GraphGroup {
  promptIds: readonly number[];
  completions: ReadonlyArray<readonly number[]>;
}

/**
 * The rows a batch of groups runs as. A group's completions share one row after their prompt (the
 * prompt's tokens once), or take a row each after a copy of it (attention over shorter rows: a row
 * of G completions of L tokens attends over (P + G L)^2 pairs, G rows over G (P + L)^2): whichever
 * costs fewer multiply-adds through a layer, its projections (2 per weight and token) and its
 * attention (scores, mixing and their backward, plus the softmax's element-wise passes). The
 * completions stay in order, so the scored tokens keep their slots.
 */
export function rowsOf(groups: readonly GraphGroup[], shape: DecoderShape): GraphGroup[] {
  const { hiddenSize: H, intermediateSize: I, numHeads: Hq, numKvHeads: Hkv, headDim: D } = shape;
  const perToken = 2 * (H * (2 * Hq * D + 2 * Hkv * D) + 3 * H * I);
  const perPair = Hq * (4 * D + 16);
  const cost = (rows: number, width: number) => rows * width * perToken + rows * width * width * perPair;
  return groups.flatMap((group) => {
    const P = group.promptIds.length;
    const joint = P + group.completions.reduce((n, c) => n + Math.max(0, c.length - 1), 0);
    const longest = P + Math.max(0, ...group.completions.map((c) => c.length - 1));
    if (group.completions.length < 2 || cost(group.completions.length, longest) >= cost(1, joint)) return [group];
    return group.completions.map((completion) => ({ promptIds: group.promptIds, completions: [completion] }));
  });
}

/** A row's padded width in the layout: its prompt, then every completion but its last token. */
export function rowWidth(group: GraphGroup): number {
  return group.promptIds.length + group.completions.reduce((n, c) => n + Math.max(0, c.length - 1), 0);
}

/**
 * Consecutive rows cut into micro-batches of at most `tokens` padded tokens (rows x the widest
 * row; a row wider than that is a micro-batch of its own). The graphs' memory is one
 * micro-batch's, and their gradients add up to the whole batch's.
 */
export function microBatches(rows: readonly GraphGroup[], tokens: number): GraphGroup[][] {
  const out: GraphGroup[][] = [];
  let current: GraphGroup[] = [];
  let widest = 0;
  for (const row of rows) {
    const width = Math.max(widest, rowWidth(row));
    if (current.length > 0 && (current.length + 1) * width > tokens) {
      out.push(current);
      current = [];
      widest = 0;
    }
    current.push(row);
    widest = Math.max(widest, rowWidth(row));
  }
  if (current.length > 0) out.push(current);
  return out;
}
