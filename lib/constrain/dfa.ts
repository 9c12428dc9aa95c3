/**
 * A byte DFA built lazily from the grammar's NFA by subset construction: a DFA state is the set of
 * live NFA states the input so far can be in, created the first time some input reaches it, and
 * each of its 256 transitions is computed the first time it is asked for. States are small
 * integers, so a matcher's whole state is one number and masks can be cached per state.
 *
 * Subset construction can need exponentially many states (`.*a.{20}` remembers where each of the
 * last 20 characters was an `a`: about 2^20 sets), each a kilobyte of transitions. Nothing here
 * enumerates them: a state exists only once a decoded row's bytes (or a mask's walk of the
 * vocabulary) reach it, as in RE2's and the structured-output engines' lazy automata, and the
 * fewest bytes to completion come from the NFA's own distances, not from a search of the DFA.
 * The DFA is still capped, in states (`maxStates`) and in the NFA states its sets hold
 * (`maxSetEntries`, the memory and the work of making them): past either, the next new state is
 * an `InvalidInputError` naming the format and the cap.
 */
import { InvalidInputError } from '../errors.js';
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
  /** Per DFA state, the fewest bytes to an accepting state (filled as states are made). */
  private readonly toAccept: number[] = [];
  /** Per NFA state, the fewest bytes from it to the end (Infinity where it cannot finish). */
  private readonly distance: Float64Array;
  private readonly mark: Uint32Array;
  private stamp = 0;
  private setEntries = 0;
  readonly start: number;

  constructor(
    private readonly nfa: Nfa,
    private readonly frag: Fragment,
    private readonly live: Uint8Array,
    /** Most states before decoding stops with an error. */
    private readonly maxStates = Infinity,
    /** Most NFA states all DFA states' sets may hold together before decoding stops with an error. */
    private readonly maxSetEntries = Infinity,
  ) {
    this.mark = new Uint32Array(nfa.size);
    this.distance = distancesToEnd(nfa, frag.end);
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
   * The fewest bytes that complete the output from `state` (0 when it is accepting): the nearest
   * end among its NFA states, each distance found once for the whole automaton (linear in it).
   * Finite for every live state.
   */
  bytesToAccept(state: number): number {
    return this.toAccept[state];
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
      if (this.setEntries + set.length > this.maxSetEntries) {
        throw new InvalidInputError(
          this.nfa.argument,
          `needs DFA states holding more than ${this.maxSetEntries} automaton states in all to decode (a long counted repeat, such as [\\s\\S]{4096}, keeps thousands alive at once); shorten the repeat or the maxLength (compileResponseFormat's maxDfaSetEntries sets the cap).`,
        );
      }
      this.setEntries += set.length;
      id = this.sets.length;
      this.sets.push(set);
      this.accepting.push(set.includes(this.frag.end));
      let nearest = Infinity;
      for (const s of set) nearest = Math.min(nearest, this.distance[s]);
      this.toAccept.push(nearest);
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

/**
 * Per NFA state, the fewest bytes on a path from it to `end`: a breadth-first search backwards
 * from `end` in which epsilon edges cost nothing and byte edges one (a 0-1 BFS over a deque).
 */
function distancesToEnd(nfa: Nfa, end: number): Float64Array {
  const n = nfa.size;
  const { epsHead, epsNext, epsTo, edgeHead, edgeNext, edgeTo } = nfa;
  // Predecessor lists, flat: first the epsilon ones, then the byte ones.
  const epsCount = new Int32Array(n + 1);
  const edgeCount = new Int32Array(n + 1);
  for (let s = 0; s < n; s++) {
    for (let k = epsHead[s]; k >= 0; k = epsNext[k]) epsCount[epsTo[k] + 1]++;
    for (let k = edgeHead[s]; k >= 0; k = edgeNext[k]) edgeCount[edgeTo[k] + 1]++;
  }
  for (let s = 0; s < n; s++) {
    epsCount[s + 1] += epsCount[s];
    edgeCount[s + 1] += edgeCount[s];
  }
  const epsFrom = new Int32Array(epsCount[n]);
  const edgeFrom = new Int32Array(edgeCount[n]);
  const epsFill = epsCount.slice(0, n);
  const edgeFill = edgeCount.slice(0, n);
  for (let s = 0; s < n; s++) {
    for (let k = epsHead[s]; k >= 0; k = epsNext[k]) epsFrom[epsFill[epsTo[k]]++] = s;
    for (let k = edgeHead[s]; k >= 0; k = edgeNext[k]) edgeFrom[edgeFill[edgeTo[k]]++] = s;
  }
  const distance = new Float64Array(n).fill(Infinity);
  // A deque in a ring of 2n slots: every state is pushed at most twice (once per improvement kind).
  const ring = new Int32Array(2 * n + 2);
  let head = n + 1;
  let tail = n + 1;
  distance[end] = 0;
  ring[tail++] = end;
  const done = new Uint8Array(n);
  while (head < tail) {
    const t = ring[head++];
    if (done[t]) continue;
    done[t] = 1;
    const d = distance[t];
    for (let i = epsCount[t]; i < epsCount[t + 1]; i++) {
      const s = epsFrom[i];
      if (d < distance[s]) {
        distance[s] = d;
        ring[--head] = s;
      }
    }
    for (let i = edgeCount[t]; i < edgeCount[t + 1]; i++) {
      const s = edgeFrom[i];
      if (d + 1 < distance[s]) {
        distance[s] = d + 1;
        ring[tail++] = s;
      }
    }
  }
  return distance;
}
