/**
 * A byte DFA built lazily from the grammar's NFA by subset construction: a DFA state is the set of
 * live NFA states the input so far can be in, created the first time some input reaches it, and
 * each of its 256 transitions is computed the first time it is asked for. States are small
 * integers, so a matcher's whole state is one number and masks can be cached per state.
 *
 * Subset construction can need exponentially many states (`.*a.{20}` remembers where each of the
 * last 20 characters was an `a`: about 2^20 sets), each a kilobyte of transitions, so the DFA is
 * capped: past `maxStates` the next new state is an `InvalidInputError` naming the format.
 */
import { InvalidInputError } from '../../errors.js';
import type { Fragment, Nfa } from './nfa.js';

/** No continuation: the byte leaves the language. */
export const DEAD = -1;
const UNKNOWN = -2;

export class LazyDfa {
  /**
   * `transitions[state * 256 + byte]`: the next state (`DEAD`, or below it when not computed
   * yet). One flat array, replaced when it grows: read it again after calling `next`.
   */
  transitions = new Int32Array(256 * 64).fill(UNKNOWN);
  private readonly sets: Int32Array[] = [];
  private readonly accepting: boolean[] = [];
  private readonly ids = new Map<string, number>();
  private readonly distances = new Map<number, number>();
  private readonly mark: Uint32Array;
  private stamp = 0;
  readonly start: number;

  constructor(
    private readonly nfa: Nfa,
    private readonly frag: Fragment,
    private readonly live: Uint8Array,
    /** Most states before decoding stops with an error. */
    private readonly maxStates = Infinity,
  ) {
    this.mark = new Uint32Array(nfa.size);
    this.start = this.intern(this.closure([frag.start]));
  }

  get size(): number {
    return this.sets.length;
  }

  next(state: number, byte: number): number {
    const t = this.transitions[state * 256 + byte];
    return t === UNKNOWN ? this.compute(state, byte) : t;
  }

  isAccepting(state: number): boolean {
    return this.accepting[state];
  }

  /**
   * The fewest bytes that complete the output from `state` (0 when it is accepting): a
   * breadth-first search over bytes, memoised per state. Finite for every live state.
   */
  bytesToAccept(state: number): number {
    const known = this.distances.get(state);
    if (known !== undefined) return known;
    const depth = new Map<number, number>([[state, 0]]);
    const queue = [state];
    let found = Infinity;
    for (let head = 0; head < queue.length; head++) {
      const s = queue[head];
      const d = depth.get(s)!;
      if (this.accepting[s]) {
        found = d;
        break;
      }
      for (let b = 0; b < 256; b++) {
        const t = this.next(s, b);
        if (t !== DEAD && !depth.has(t)) {
          depth.set(t, d + 1);
          queue.push(t);
        }
      }
    }
    this.distances.set(state, found);
    return found;
  }

  private compute(state: number, byte: number): number {
    const targets: number[] = [];
    const { edgeHead, edgeNext, edgeLo, edgeHi, edgeTo } = this.nfa;
    for (const s of this.sets[state]) {
      for (let k = edgeHead[s]; k >= 0; k = edgeNext[k]) {
        if (byte >= edgeLo[k] && byte <= edgeHi[k] && this.live[edgeTo[k]]) targets.push(edgeTo[k]);
      }
    }
    const next = targets.length === 0 ? DEAD : this.intern(this.closure(targets));
    this.transitions[state * 256 + byte] = next;
    return next;
  }

  /**
   * The live states reachable from `seeds` without reading, sorted; only those that read a byte
   * or accept, so that sets differing in pass-through states are one DFA state.
   */
  private closure(seeds: number[]): Int32Array {
    const stamp = ++this.stamp;
    const out: number[] = [];
    const { epsHead, epsNext, epsTo } = this.nfa;
    const stack = seeds.filter((s) => this.live[s]);
    for (const s of stack) this.mark[s] = stamp;
    while (stack.length) {
      const s = stack.pop()!;
      if (this.nfa.hasEdges(s) || s === this.frag.end) out.push(s);
      for (let k = epsHead[s]; k >= 0; k = epsNext[k]) {
        const t = epsTo[k];
        if (this.live[t] && this.mark[t] !== stamp) {
          this.mark[t] = stamp;
          stack.push(t);
        }
      }
    }
    return Int32Array.from(out).sort();
  }

  private intern(set: Int32Array): number {
    if (set.length === 0) return DEAD;
    const key = set.join(',');
    let id = this.ids.get(key);
    if (id === undefined) {
      if (this.sets.length >= this.maxStates) {
        throw new InvalidInputError(
          this.nfa.argument,
          `needs more than ${this.maxStates} DFA states to decode (a repeat after an open-ended part, such as .*a.{20}, multiplies them); bound the open-ended part or shorten the repeat (compileResponseFormat's maxDfaStates sets the cap).`,
        );
      }
      id = this.sets.length;
      this.sets.push(set);
      this.accepting.push(set.includes(this.frag.end));
      if ((id + 1) * 256 > this.transitions.length) {
        const grown = new Int32Array(this.transitions.length * 2).fill(UNKNOWN);
        grown.set(this.transitions);
        this.transitions = grown;
      }
      this.ids.set(key, id);
    }
    return id;
  }
}
