/**
 * A Thompson NFA with range-labelled edges, and the combinators the grammars are built from. The
 * same structure serves two alphabets: code points (a string's characters, before they are
 * encoded) and bytes (the output the matcher walks). Fragments have one entry and one exit state,
 * so a list `x (sep x)*` loops through a single copy of `x` and only counted repeats copy it.
 */
import { InvalidInputError } from '../errors.js';

export interface Fragment {
  start: number;
  end: number;
}

/**
 * The time budget of the compile in progress: `compileResponseFormat` sets it around its
 * synchronous work (so no two compiles interleave), and every NFA built meanwhile checks it as it
 * grows, since building states is where a compile's time goes. A module-level setting rather than
 * a field, because the parts of a compile make their own NFAs (a pattern's characters, a counted
 * string's product) and all of them must stop.
 */
let compileDeadline: { at: number; ms: number; argument: string } | null = null;

/** Runs `compile` under a budget of `ms` milliseconds (Infinity: none); errors name `argument`. */
export function withCompileBudget<T>(ms: number, argument: string, compile: () => T): T {
  if (ms === Infinity) return compile();
  const outer = compileDeadline;
  compileDeadline = { at: performance.now() + ms, ms, argument };
  try {
    return compile();
  } finally {
    compileDeadline = outer;
  }
}

/** States built (or steps of other work) between two looks at the clock (well under a microsecond each, warm). */
export const CLOCK_EVERY = 1024;

/** Throws the InvalidInputError naming the budget when the compile in progress has run past it. */
export function checkCompileBudget(): void {
  if (compileDeadline && performance.now() > compileDeadline.at) {
    throw new InvalidInputError(
      compileDeadline.argument,
      `takes more than the compile budget of ${compileDeadline.ms} ms (maxCompileMs; serve's formatCompileMs) to compile; lower maxLength / maxItems / repeat counts or the nesting.`,
    );
  }
}

/** Builds a fresh copy of a sub-automaton (repeats need one per occurrence). */
export type Make = () => Fragment;

/** A growable list of int32 columns, one row per entry. */
class Pool {
  columns: Int32Array[];
  size = 0;
  constructor(width: number) {
    this.columns = Array.from({ length: width }, () => new Int32Array(256));
  }
  add(): number {
    if (this.size === this.columns[0].length) {
      this.columns = this.columns.map((c) => {
        const grown = new Int32Array(c.length * 2);
        grown.set(c);
        return grown;
      });
    }
    return this.size++;
  }
}

/**
 * States and their edges live in flat int32 lists (per state the first and last entry of its
 * epsilon list and of its edge list, each entry linking to the next), not one array per state:
 * a format compiles to hundreds of thousands of states, and small arrays would be most of the
 * work (the garbage collector's). Read them after building with, for a state `s`:
 *
 *   for (let k = nfa.epsHead[s]; k >= 0; k = nfa.epsNext[k]) nfa.epsTo[k]
 *   for (let k = nfa.edgeHead[s]; k >= 0; k = nfa.edgeNext[k]) nfa.edgeLo[k], nfa.edgeHi[k], nfa.edgeTo[k]
 *
 * in the order they were added. The arrays are replaced as they grow: read them again after adding.
 */
export class Nfa {
  private readonly states = new Pool(4);
  private readonly epsPool = new Pool(2);
  private readonly edgePool = new Pool(4);

  /** `limit`: most states before compiling stops (`argument` names what was being compiled). */
  constructor(
    readonly limit: number,
    readonly argument: string,
  ) {}

  get size(): number {
    return this.states.size;
  }

  get epsHead(): Int32Array {
    return this.states.columns[0];
  }
  get edgeHead(): Int32Array {
    return this.states.columns[2];
  }
  get epsTo(): Int32Array {
    return this.epsPool.columns[0];
  }
  get epsNext(): Int32Array {
    return this.epsPool.columns[1];
  }
  get edgeLo(): Int32Array {
    return this.edgePool.columns[0];
  }
  get edgeHi(): Int32Array {
    return this.edgePool.columns[1];
  }
  get edgeTo(): Int32Array {
    return this.edgePool.columns[2];
  }
  get edgeNext(): Int32Array {
    return this.edgePool.columns[3];
  }

  state(): number {
    if (this.states.size >= this.limit) {
      throw new InvalidInputError(
        this.argument,
        `compiles to more than ${this.limit} automaton states; lower maxLength / maxItems / repeat counts or the nesting.`,
      );
    }
    if ((this.states.size & (CLOCK_EVERY - 1)) === CLOCK_EVERY - 1) checkCompileBudget();
    const s = this.states.add();
    const [epsHead, epsTail, edgeHead, edgeTail] = this.states.columns;
    epsHead[s] = epsTail[s] = edgeHead[s] = edgeTail[s] = -1;
    return s;
  }

  epsilon(from: number, to: number): void {
    const k = this.epsPool.add();
    const [target, next] = this.epsPool.columns;
    target[k] = to;
    next[k] = -1;
    const [head, tail] = this.states.columns;
    if (tail[from] < 0) head[from] = k;
    else next[tail[from]] = k;
    tail[from] = k;
  }

  edge(from: number, lo: number, hi: number, to: number): void {
    const k = this.edgePool.add();
    const [los, his, targets, next] = this.edgePool.columns;
    los[k] = lo;
    his[k] = hi;
    targets[k] = to;
    next[k] = -1;
    const head = this.states.columns[2];
    const tail = this.states.columns[3];
    if (tail[from] < 0) head[from] = k;
    else next[tail[from]] = k;
    tail[from] = k;
  }

  hasEdges(s: number): boolean {
    return this.states.columns[2][s] >= 0;
  }

  empty(): Fragment {
    const s = this.state();
    return { start: s, end: s };
  }

  /** One step over any label of any of the ranges. */
  ranges(ranges: ReadonlyArray<readonly [number, number]>): Fragment {
    const start = this.state();
    const end = this.state();
    for (const [lo, hi] of ranges) this.edge(start, lo, hi, end);
    return { start, end };
  }

  literal(labels: ArrayLike<number>): Fragment {
    const start = this.state();
    let end = start;
    for (let i = 0; i < labels.length; i++) {
      const next = this.state();
      this.edge(end, labels[i], labels[i], next);
      end = next;
    }
    return { start, end };
  }

  seq(parts: Fragment[]): Fragment {
    if (parts.length === 0) return this.empty();
    for (let i = 1; i < parts.length; i++) this.epsilon(parts[i - 1].end, parts[i].start);
    return { start: parts[0].start, end: parts[parts.length - 1].end };
  }

  alt(parts: Fragment[]): Fragment {
    if (parts.length === 1) return parts[0];
    const start = this.state();
    const end = this.state();
    for (const part of parts) {
      this.epsilon(start, part.start);
      this.epsilon(part.end, end);
    }
    return { start, end };
  }

  /** `make` repeated `min` to `max` times (`max` may be Infinity). */
  repeat(make: Make, min: number, max: number): Fragment {
    const start = this.state();
    let cursor = start;
    for (let i = 0; i < min; i++) {
      const part = make();
      this.epsilon(cursor, part.start);
      cursor = part.end;
    }
    if (max === Infinity) {
      const part = make();
      this.epsilon(cursor, part.start);
      this.epsilon(part.end, cursor);
      return { start, end: cursor };
    }
    const end = this.state();
    this.epsilon(cursor, end);
    for (let i = min; i < max; i++) {
      const part = make();
      this.epsilon(cursor, part.start);
      cursor = part.end;
      this.epsilon(cursor, end);
    }
    return { start, end };
  }

  /**
   * The states that lie on some path from `start` to `end`. Only these may enter a matcher's
   * state, so every state it can be in can still finish. Throws when `end` is unreachable.
   */
  live(frag: Fragment): Uint8Array {
    const n = this.size;
    const { epsHead, epsNext, epsTo, edgeHead, edgeNext, edgeTo } = this;
    // Predecessors in one flat list (counted, then filled), for the backward pass.
    const count = new Int32Array(n + 1);
    for (let s = 0; s < n; s++) {
      for (let k = epsHead[s]; k >= 0; k = epsNext[k]) count[epsTo[k] + 1]++;
      for (let k = edgeHead[s]; k >= 0; k = edgeNext[k]) count[edgeTo[k] + 1]++;
    }
    for (let s = 0; s < n; s++) count[s + 1] += count[s];
    const from = new Int32Array(count[n]);
    const fill = count.slice(0, n);
    for (let s = 0; s < n; s++) {
      for (let k = epsHead[s]; k >= 0; k = epsNext[k]) from[fill[epsTo[k]]++] = s;
      for (let k = edgeHead[s]; k >= 0; k = edgeNext[k]) from[fill[edgeTo[k]]++] = s;
    }
    const forward = new Uint8Array(n);
    const stack = new Int32Array(n);
    let top = 0;
    forward[frag.start] = 1;
    stack[top++] = frag.start;
    while (top > 0) {
      const s = stack[--top];
      for (let k = epsHead[s]; k >= 0; k = epsNext[k]) {
        const t = epsTo[k];
        if (!forward[t]) {
          forward[t] = 1;
          stack[top++] = t;
        }
      }
      for (let k = edgeHead[s]; k >= 0; k = edgeNext[k]) {
        const t = edgeTo[k];
        if (!forward[t]) {
          forward[t] = 1;
          stack[top++] = t;
        }
      }
    }
    if (!forward[frag.end]) {
      throw new InvalidInputError(this.argument, 'accepts no output at all (an empty enum, a contradiction, or a class that matches nothing).');
    }
    // Live: reachable from the start and reaching the end.
    const live = new Uint8Array(n);
    live[frag.end] = 1;
    stack[top++] = frag.end;
    while (top > 0) {
      const t = stack[--top];
      for (let i = count[t]; i < count[t + 1]; i++) {
        const s = from[i];
        if (!live[s] && forward[s]) {
          live[s] = 1;
          stack[top++] = s;
        }
      }
    }
    return live;
  }
}

/**
 * Whether some input takes both `a` and `b` (fragments of one NFA, not yet linked to anything)
 * from start to end: a search over pairs of states. Each pair visited spends one of
 * `budget.left`; `'unknown'` when it runs out.
 */
export function overlaps(nfa: Nfa, a: Fragment, b: Fragment, budget: { left: number }): boolean | 'unknown' {
  const n = nfa.size;
  const { epsHead, epsNext, epsTo, edgeHead, edgeNext, edgeLo, edgeHi, edgeTo } = nfa;
  const seen = new Set<number>();
  const stack: number[] = [];
  const push = (p: number, q: number) => {
    const key = p * n + q;
    if (seen.has(key)) return;
    seen.add(key);
    budget.left--;
    stack.push(p, q);
  };
  push(a.start, b.start);
  while (stack.length) {
    if (budget.left < 0) return 'unknown';
    if ((budget.left & (CLOCK_EVERY - 1)) === 0) checkCompileBudget();
    const q = stack.pop()!;
    const p = stack.pop()!;
    if (p === a.end && q === b.end) return true;
    for (let k = epsHead[p]; k >= 0; k = epsNext[k]) push(epsTo[k], q);
    for (let k = epsHead[q]; k >= 0; k = epsNext[k]) push(p, epsTo[k]);
    for (let i = edgeHead[p]; i >= 0; i = edgeNext[i]) {
      for (let j = edgeHead[q]; j >= 0; j = edgeNext[j]) {
        if (edgeLo[i] <= edgeHi[j] && edgeLo[j] <= edgeHi[i]) push(edgeTo[i], edgeTo[j]);
      }
    }
  }
  return false;
}
