/**
 * Whether two backends computed the same numbers: the per-token log-probs of the same sequences,
 * and a training step's scalars (loss, gradient norm). Pure functions, so the comparison that
 * decides the GPU check's verdict is tested on its own.
 */

export interface LogprobAgreement {
  /** Largest |a - b| over every token (Infinity when a value is not finite or the shapes differ). */
  maxAbs: number;
  /** Where it is: [row, token]; null when there are no tokens. */
  at: [number, number] | null;
  tokens: number;
  tolerance: number;
  ok: boolean;
  /** Why it failed, when it did for another reason than a difference (shape, non-finite value). */
  problem?: string;
}

export function compareLogprobs(a: readonly (readonly number[])[], b: readonly (readonly number[])[], tolerance: number): LogprobAgreement {
  const fail = (problem: string, at: [number, number] | null, tokens: number): LogprobAgreement => ({ maxAbs: Infinity, at, tokens, tolerance, ok: false, problem });
  if (a.length !== b.length) return fail(`${a.length} rows against ${b.length}`, null, 0);
  let maxAbs = 0;
  let at: [number, number] | null = null;
  let tokens = 0;
  for (let row = 0; row < a.length; row++) {
    if (a[row].length !== b[row].length) return fail(`row ${row} has ${a[row].length} tokens against ${b[row].length}`, [row, 0], tokens);
    for (let k = 0; k < a[row].length; k++) {
      tokens++;
      if (!Number.isFinite(a[row][k]) || !Number.isFinite(b[row][k])) return fail(`row ${row} token ${k} is ${a[row][k]} against ${b[row][k]}`, [row, k], tokens);
      const diff = Math.abs(a[row][k] - b[row][k]);
      if (diff > maxAbs || at === null) {
        maxAbs = Math.max(maxAbs, diff);
        at = [row, k];
      }
    }
  }
  return { maxAbs, at, tokens, tolerance, ok: maxAbs <= tolerance };
}

export interface ScalarAgreement {
  name: string;
  a: number;
  b: number;
  /** |a - b| */
  absolute: number;
  /** |a - b| / max(|a|, |b|); 0 when both are 0. Both are Infinity when either value is not finite. */
  relative: number;
  /** Which of the two the tolerance bounds: absolute for values near 0 (a GRPO loss at ratio 1), relative otherwise. */
  mode: 'absolute' | 'relative';
  tolerance: number;
  ok: boolean;
}

export function compareScalar(name: string, a: number, b: number, tolerance: number, mode: 'absolute' | 'relative'): ScalarAgreement {
  const finite = Number.isFinite(a) && Number.isFinite(b);
  const absolute = finite ? Math.abs(a - b) : Infinity;
  const scale = Math.max(Math.abs(a), Math.abs(b));
  const relative = !finite ? Infinity : scale === 0 ? 0 : absolute / scale;
  return { name, a, b, absolute, relative, mode, tolerance, ok: (mode === 'absolute' ? absolute : relative) <= tolerance };
}
