/**
 * A Thompson NFA with range-labelled edges, and the combinators the grammars are built from. The
 * same structure serves two alphabets: code points (a string's characters, before they are
 * encoded) and bytes (the output the matcher walks). Fragments have one entry and one exit state,
 * so a list `x (sep x)*` loops through a single copy of `x` and only counted repeats copy it.
 */
import { InvalidInputError } from '../../errors.js';

export interface Fragment {
  start: number;
  end: number;
}

/** Builds a fresh copy of a sub-automaton (repeats need one per occurrence). */
export type Make = () => Fragment;

export class Nfa {
  /** Per state: the states reached without reading anything. */
  readonly eps: number[][] = [];
  /** Per state: flat triples `lo, hi, target`. */
  readonly edges: number[][] = [];

  /** `limit`: most states before compiling stops (`argument` names what was being compiled). */
  constructor(
    readonly limit: number,
    readonly argument: string,
  ) {}

  get size(): number {
    return this.eps.length;
  }

  state(): number {
    if (this.eps.length >= this.limit) {
      throw new InvalidInputError(
        this.argument,
        `compiles to more than ${this.limit} automaton states; lower maxLength / maxItems / repeat counts or the nesting.`,
      );
    }
    this.eps.push([]);
    this.edges.push([]);
    return this.eps.length - 1;
  }

  epsilon(from: number, to: number): void {
    this.eps[from].push(to);
  }

  edge(from: number, lo: number, hi: number, to: number): void {
    this.edges[from].push(lo, hi, to);
  }

  empty(): Fragment {
    const s = this.state();
    return { start: s, end: s };
  }

  /** One step over any label in `[lo, hi]`. */
  range(lo: number, hi = lo): Fragment {
    const start = this.state();
    const end = this.state();
    this.edge(start, lo, hi, end);
    return { start, end };
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

  optional(part: Fragment): Fragment {
    const start = this.state();
    const end = this.state();
    this.epsilon(start, part.start);
    this.epsilon(part.end, end);
    this.epsilon(start, end);
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

  /** `min` to `max` items separated by `sep`: `item (sep item)*` within the bounds. */
  list(item: Make, sep: Make, min: number, max: number): Fragment {
    if (max === 0) return this.empty();
    const first = item();
    const rest = this.repeat(() => this.seq([sep(), item()]), Math.max(min - 1, 0), max - 1);
    const some = this.seq([first, rest]);
    return min === 0 ? this.optional(some) : some;
  }

  /**
   * The states that lie on some path from `start` to `end`. Only these may enter a matcher's
   * state, so every state it can be in can still finish. Throws when `end` is unreachable.
   */
  live(frag: Fragment): Uint8Array {
    const n = this.size;
    const forward = new Uint8Array(n);
    const stack = [frag.start];
    forward[frag.start] = 1;
    const reverse: number[][] = Array.from({ length: n }, () => []);
    while (stack.length) {
      const s = stack.pop()!;
      const visit = (t: number) => {
        reverse[t].push(s);
        if (!forward[t]) {
          forward[t] = 1;
          stack.push(t);
        }
      };
      for (const t of this.eps[s]) visit(t);
      const e = this.edges[s];
      for (let i = 2; i < e.length; i += 3) visit(e[i]);
    }
    const live = new Uint8Array(n);
    if (!forward[frag.end]) {
      throw new InvalidInputError(this.argument, 'accepts no output at all (an empty enum, a contradiction, or a class that matches nothing).');
    }
    live[frag.end] = 1;
    stack.push(frag.end);
    while (stack.length) {
      const t = stack.pop()!;
      for (const s of reverse[t]) {
        if (!live[s]) {
          live[s] = 1;
          stack.push(s);
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
    const q = stack.pop()!;
    const p = stack.pop()!;
    if (p === a.end && q === b.end) return true;
    for (const t of nfa.eps[p]) push(t, q);
    for (const t of nfa.eps[q]) push(p, t);
    const ep = nfa.edges[p];
    const eq = nfa.edges[q];
    for (let i = 0; i < ep.length; i += 3) {
      for (let j = 0; j < eq.length; j += 3) {
        if (ep[i] <= eq[j + 1] && eq[j] <= ep[i + 1]) push(ep[i + 2], eq[j + 2]);
      }
    }
  }
  return false;
}
