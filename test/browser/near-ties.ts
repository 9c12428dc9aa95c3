/**
 * Comparing the choices two engines make on floats that differ by rounding (Node against Chromium,
 * WebAssembly against WebGPU, a float32 or float16 kernel against the float64 reference). Where the
 * two best candidates are further apart than the engines' tolerance, both must choose the same;
 * where they are closer, either may win, so the step is counted as a tie instead of compared, and
 * what is chosen there must still be one of the close candidates.
 */
import { expect } from 'vitest';

export interface Agreement {
  /** Choices compared exactly. */
  compared: number;
  /** Near ties, where only membership among the close candidates is checked. */
  ties: number;
}

interface Alternative {
  tokenId: number;
  logprob: number;
}

interface GreedyRow {
  tokenIds: number[];
  /** Per step, at least the two most likely tokens (`topLogprobs: 2`). */
  topLogprobs?: Alternative[][];
}

/**
 * Two greedy completions of the same prompt: token by token the same while each step's top two
 * log-probs are more than 2 × tolerance apart on both engines (each side may be off by
 * `tolerance`). At a near tie either token may come; once they differ the prefixes differ and
 * nothing after is comparable.
 */
export function greedyAgreement(a: GreedyRow, b: GreedyRow, tolerance: number, label = ''): Agreement {
  const margin = (row: GreedyRow, t: number) => {
    const top = row.topLogprobs?.[t];
    if (!top || top.length < 2) throw new Error(`${label}: greedy rows need topLogprobs >= 2 to judge their margins`);
    return top[0].logprob - top[1].logprob;
  };
  const result = { compared: 0, ties: 0 };
  const steps = Math.min(a.tokenIds.length, b.tokenIds.length);
  for (let t = 0; t < steps; t++) {
    const close = Math.min(margin(a, t), margin(b, t)) <= 2 * tolerance;
    if (!close) {
      expect(b.tokenIds[t], `${label} step ${t}: a clear winner (margin over ${2 * tolerance})`).toBe(a.tokenIds[t]);
      result.compared++;
      continue;
    }
    result.ties++;
    if (a.tokenIds[t] !== b.tokenIds[t]) {
      // Each engine's choice is among the other's close candidates.
      const near = (row: GreedyRow) => row.topLogprobs![t].filter((x) => row.topLogprobs![t][0].logprob - x.logprob <= 2 * tolerance).map((x) => x.tokenId);
      expect(near(a), `${label} step ${t}`).toContain(b.tokenIds[t]);
      expect(near(b), `${label} step ${t}`).toContain(a.tokenIds[t]);
      return result;
    }
  }
  if (a.tokenIds.length !== b.tokenIds.length) expect(b.tokenIds.length, `${label}: same length`).toBe(a.tokenIds.length);
  return result;
}

/**
 * The top-k alternatives of one step from two engines, most likely first: at every rank more than
 * 2 × tolerance from its neighbours the same token (the last rank only where the other side's last
 * is not within tolerance, since the next one down is not listed); log-probs within tolerance of
 * each other rank by rank.
 */
export function topAgreement(a: Alternative[], b: Alternative[], tolerance: number, label = ''): Agreement {
  expect(b.length, label).toBe(a.length);
  const result = { compared: 0, ties: 0 };
  for (let j = 0; j < a.length; j++) {
    expect(Math.abs(a[j].logprob - b[j].logprob), `${label} rank ${j}`).toBeLessThan(tolerance);
    const above = j === 0 ? Infinity : a[j - 1].logprob - a[j].logprob;
    const below = j === a.length - 1 ? Infinity : a[j].logprob - a[j + 1].logprob;
    if (Math.min(above, below) > 2 * tolerance && (j < a.length - 1 || b[j].tokenId === a[j].tokenId)) {
      expect(b[j].tokenId, `${label} rank ${j}`).toBe(a[j].tokenId);
      result.compared++;
    } else {
      result.ties++;
    }
  }
  return result;
}

/**
 * Draws of a kernel against the reference, pick by pick. `nearby[i]` lists what the reference
 * draws for pick i under computations a rounding away (test/browser/pages/page-helpers.ts,
 * nearbyDraws): one token, and the kernel must draw it, with log-probs to `tolerance`; several,
 * and the kernel's draw must be one of them.
 */
export function drawAgreement(
  gpu: Array<{ tokenId: number; logprob: number; sampledLogprob: number }>,
  cpu: Array<{ tokenId: number; logprob: number; sampledLogprob: number }>,
  nearby: number[][],
  tolerance: number,
  label = '',
): Agreement {
  const result = { compared: 0, ties: 0 };
  cpu.forEach((c, i) => {
    const g = gpu[i];
    if (nearby[i].length === 1) {
      expect(nearby[i][0], `${label} pick ${i}: the reference is stable`).toBe(c.tokenId);
      expect(g.tokenId, `${label} pick ${i}`).toBe(c.tokenId);
      result.compared++;
    } else {
      expect(nearby[i], `${label} pick ${i}: a draw the reference makes nearby`).toContain(g.tokenId);
      result.ties++;
    }
    if (g.tokenId === c.tokenId) {
      expect(Math.abs(g.logprob - c.logprob), `${label} pick ${i}`).toBeLessThan(tolerance);
      expect(Math.abs(g.sampledLogprob - c.sampledLogprob), `${label} pick ${i}`).toBeLessThan(tolerance);
    }
  });
  return result;
}
