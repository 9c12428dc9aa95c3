/**
 * From characters to bytes. A string's language is first built over code points (a pattern, a
 * length bound, or both intersected), then copied into the byte automaton with every character
 * edge spelled out in UTF-8: raw for the `regex` format, or as the body of a JSON string literal,
 * where `"`, `\` and control characters are written as escapes (each escape one character).
 */
import { utf8Sequences, intersect, normalize, type CharSet, type ByteSequence, MAX_CODE_POINT } from './charset.js';
import { checkCompileBudget, Nfa, type Fragment } from './nfa.js';

export type Encoding = 'raw' | 'json';

/** Characters a JSON string may hold unescaped. */
const JSON_RAW: CharSet = normalize([
  [0x20, 0x21],
  [0x23, 0x5b],
  [0x5d, MAX_CODE_POINT],
]);
const SHORT_ESCAPES: ReadonlyArray<readonly [number, string]> = [
  [0x08, 'b'],
  [0x09, 't'],
  [0x0a, 'n'],
  [0x0c, 'f'],
  [0x0d, 'r'],
];
const code = (s: string) => s.charCodeAt(0);

/** Copies the character fragment `frag` of `chars` into `bytes`, encoding every edge. */
export function lowerChars(chars: Nfa, frag: Fragment, bytes: Nfa, encoding: Encoding): Fragment {
  const live = chars.live(frag);
  const map = new Int32Array(chars.size).fill(-1);
  const get = (s: number) => (map[s] >= 0 ? map[s] : (map[s] = bytes.state()));
  const suffixes = new Map<string, number>();
  for (let s = 0; s < chars.size; s++) {
    if (!live[s]) continue;
    for (let k = chars.epsHead[s]; k >= 0; k = chars.epsNext[k]) if (live[chars.epsTo[k]]) bytes.epsilon(get(s), get(chars.epsTo[k]));
    const byTarget = edgesByTarget(chars, s, live);
    for (const [t, ranges] of byTarget) {
      const set = normalize(ranges);
      const from = get(s);
      const to = get(t);
      if (encoding === 'raw') addUtf8(bytes, from, to, set, suffixes);
      else addJsonChars(bytes, from, to, set, suffixes);
    }
  }
  return { start: get(frag.start), end: get(frag.end) };
}

/**
 * The most states `lowerChars` adds to the byte automaton for one character edge over `set` (the
 * inner bytes of its UTF-8 sequences, and for JSON the escape states), before any sharing.
 */
export function encodedExtra(set: CharSet, encoding: Encoding): number {
  // addSequence shares the states of equal suffixes: count the distinct ones.
  const inner = (chars: CharSet) => {
    const suffixes = new Set<string>();
    for (const sequence of utf8Sequences(chars)) {
      let key = '';
      for (let i = sequence.length - 1; i >= 1; i--) suffixes.add((key += `:${sequence[i][0]}-${sequence[i][1]}`));
    }
    return suffixes.size;
  };
  if (encoding === 'raw') return inner(set);
  const escaped = intersect(set, [[0, 0x1f], [0x22, 0x22], [0x5c, 0x5c]]).length > 0;
  const controls = intersect(set, [[0, 0x1f]]).length > 0;
  return inner(intersect(set, JSON_RAW)) + (escaped ? 1 : 0) + (controls ? 5 : 0);
}

/** The live edges of `s`, their ranges grouped by target. */
function edgesByTarget(chars: Nfa, s: number, live: Uint8Array): Map<number, Array<[number, number]>> {
  const byTarget = new Map<number, Array<[number, number]>>();
  for (let k = chars.edgeHead[s]; k >= 0; k = chars.edgeNext[k]) {
    const t = chars.edgeTo[k];
    if (!live[t]) continue;
    const list = byTarget.get(t) ?? [];
    list.push([chars.edgeLo[k], chars.edgeHi[k]]);
    byTarget.set(t, list);
  }
  return byTarget;
}

/**
 * Byte paths `from` → `to` for every character of `set`. Paths that end alike share their tail
 * states (`suffixes`, keyed by target and byte ranges), which keeps a counted string at a few
 * states per character.
 */
function addUtf8(bytes: Nfa, from: number, to: number, set: CharSet, suffixes: Map<string, number>): void {
  for (const sequence of utf8Sequences(set)) addSequence(bytes, from, to, sequence, suffixes);
}

function addSequence(bytes: Nfa, from: number, to: number, sequence: ByteSequence, suffixes: Map<string, number>): void {
  let cursor = to;
  let key = `${to}`;
  for (let i = sequence.length - 1; i >= 1; i--) {
    const [lo, hi] = sequence[i];
    key += `:${lo}-${hi}`;
    let state = suffixes.get(key);
    if (state === undefined) {
      state = bytes.state();
      bytes.edge(state, lo, hi, cursor);
      suffixes.set(key, state);
    }
    cursor = state;
  }
  bytes.edge(from, sequence[0][0], sequence[0][1], cursor);
}

function addJsonChars(bytes: Nfa, from: number, to: number, set: CharSet, suffixes: Map<string, number>): void {
  addUtf8(bytes, from, to, intersect(set, JSON_RAW), suffixes);
  const controls = intersect(set, [[0, 0x1f]]);
  const quote = intersect(set, [[0x22, 0x22]]).length > 0;
  const backslash = intersect(set, [[0x5c, 0x5c]]).length > 0;
  if (!quote && !backslash && controls.length === 0) return;
  const escape = bytes.state();
  bytes.edge(from, 0x5c, 0x5c, escape);
  if (quote) bytes.edge(escape, 0x22, 0x22, to);
  if (backslash) bytes.edge(escape, 0x5c, 0x5c, to);
  if (controls.length === 0) return;
  const has = (c: number) => controls.some(([lo, hi]) => c >= lo && c <= hi);
  for (const [c, letter] of SHORT_ESCAPES) if (has(c)) bytes.edge(escape, code(letter), code(letter), to);
  // `\u00XX` for every control character: `u`, `0`, `0`, then the high and the low hex digit.
  const u = bytes.state();
  const zero = bytes.state();
  const high = bytes.state();
  bytes.edge(escape, code('u'), code('u'), u);
  bytes.edge(u, code('0'), code('0'), zero);
  bytes.edge(zero, code('0'), code('0'), high);
  for (const nibble of [0, 1]) {
    let low = -1;
    for (let c = nibble * 16; c < nibble * 16 + 16; c++) {
      if (!has(c)) continue;
      if (low < 0) {
        low = bytes.state();
        bytes.edge(high, code(String(nibble)), code(String(nibble)), low);
      }
      const digit = code((c % 16).toString(16));
      bytes.edge(low, digit, digit, to);
    }
  }
}

/**
 * What `lowerChars` adds to the byte automaton for the live part of `frag`: its states, and the
 * encoding states of its edges (grouped by target, as lowerChars groups them).
 */
export function loweredSize(chars: Nfa, frag: Fragment, encoding: Encoding): { states: number; extra: number } {
  const live = chars.live(frag);
  const extra = edgeExtras(chars, live, encoding);
  let states = 0;
  let total = 0;
  for (let s = 0; s < chars.size; s++) {
    if (!live[s]) continue;
    states++;
    total += extra[s];
  }
  return { states, extra: total };
}

/** Per state, the encoding states its live edges add. */
function edgeExtras(chars: Nfa, live: Uint8Array, encoding: Encoding): Float64Array {
  const out = new Float64Array(chars.size);
  for (let s = 0; s < chars.size; s++) {
    if (!live[s]) continue;
    for (const ranges of edgesByTarget(chars, s, live).values()) out[s] += encodedExtra(normalize(ranges), encoding);
  }
  return out;
}

/**
 * What `countChars(chars, frag, min, max)` then `lowerChars` will build, without building it:
 * the states reachable after each count of characters, summed over the counts. The sets repeat
 * after a few counts for any pattern (`[a-z]*` after one, `(ab)*` every two), and the sum is
 * extrapolated from there; `workLimit` bounds the search, past it the bound is every live state
 * at every count.
 */
export function countedSize(chars: Nfa, frag: Fragment, min: number, max: number, encoding: Encoding, workLimit: number): { states: number; extra: number } {
  const live = chars.live(frag);
  const extraOf = edgeExtras(chars, live, encoding);
  const top = max === Infinity ? min : max;
  const closure = (seeds: Iterable<number>): number[] => {
    const seen = new Set<number>();
    const stack = [...seeds];
    while (stack.length) {
      const s = stack.pop()!;
      if (seen.has(s) || !live[s]) continue;
      seen.add(s);
      for (let k = chars.epsHead[s]; k >= 0; k = chars.epsNext[k]) stack.push(chars.epsTo[k]);
    }
    return [...seen].sort((a, b) => a - b);
  };
  const step = (set: number[]): number[] => {
    const targets: number[] = [];
    for (const s of set) {
      for (let k = chars.edgeHead[s]; k >= 0; k = chars.edgeNext[k]) targets.push(chars.edgeTo[k]);
    }
    return closure(targets);
  };
  const level = (set: number[], withEdges: boolean) => ({ states: set.length, extra: withEdges ? set.reduce((sum, s) => sum + extraOf[s], 0) : 0 });
  let states = 1;
  let extra = 0;
  let work = 0;
  const firstSeen = new Map<string, number>();
  const history: Array<{ states: number; extra: number }> = [];
  let current = closure([frag.start]);
  for (let k = 0; k <= top; k++) {
    if (current.length === 0) break;
    if (max === Infinity && k === top) {
      // Counts saturate at `min`: every state reachable from here, with its edges.
      const all = new Set(current);
      for (let frontier = current; frontier.length; ) {
        frontier = step(frontier).filter((s) => !all.has(s));
        for (const s of frontier) all.add(s);
      }
      const last = level([...all], true);
      return { states: states + last.states, extra: extra + last.extra };
    }
    const key = current.join(',');
    const seenAt = firstSeen.get(key);
    if (seenAt !== undefined) {
      // Counts k..top repeat counts seenAt.. with period k - seenAt; the last count has no edges.
      const period = k - seenAt;
      const n = top - k + 1;
      const sum = (from: number, count: number) =>
        history.slice(from, from + count).reduce((acc, x) => ({ states: acc.states + x.states, extra: acc.extra + x.extra }), { states: 0, extra: 0 });
      const cycle = sum(seenAt, period);
      const partial = sum(seenAt, n % period);
      const cycles = Math.floor(n / period);
      const last = history[seenAt + ((top - k) % period)];
      return { states: states + cycles * cycle.states + partial.states, extra: extra + cycles * cycle.extra + partial.extra - last.extra };
    }
    firstSeen.set(key, k);
    const here = level(current, true);
    history.push(here);
    states += here.states;
    if (k < top) extra += here.extra;
    work += current.length;
    if ((k & 7) === 7) checkCompileBudget();
    if (work > workLimit) {
      const all = loweredSize(chars, frag, encoding);
      return { states: states + (top - k) * all.states, extra: extra + (top - k) * all.extra };
    }
    current = step(current);
  }
  return { states, extra };
}

/**
 * The intersection of the character language `frag` with "between `min` and `max` characters":
 * a product with a counter, built only over reachable pairs. `max` may be Infinity.
 */
export function countChars(chars: Nfa, frag: Fragment, min: number, max: number): { nfa: Nfa; frag: Fragment } {
  const live = chars.live(frag);
  const out = new Nfa(chars.limit, chars.argument);
  const top = max === Infinity ? min : max;
  const ids = new Map<number, number>();
  const queue: number[] = [];
  const get = (s: number, k: number) => {
    const key = s * (top + 1) + k;
    let id = ids.get(key);
    if (id === undefined) {
      id = out.state();
      ids.set(key, id);
      queue.push(s, k);
    }
    return id;
  };
  const start = get(frag.start, 0);
  const end = out.state();
  while (queue.length) {
    const k = queue.pop()!;
    const s = queue.pop()!;
    const id = get(s, k);
    if (s === frag.end && k >= min) out.epsilon(id, end);
    for (let j = chars.epsHead[s]; j >= 0; j = chars.epsNext[j]) if (live[chars.epsTo[j]]) out.epsilon(id, get(chars.epsTo[j], k));
    const next = max === Infinity ? Math.min(k + 1, top) : k + 1;
    if (next > top) continue;
    for (let j = chars.edgeHead[s]; j >= 0; j = chars.edgeNext[j]) {
      // get() may grow `out`, never `chars`: chars' arrays stay valid across the loop.
      if (live[chars.edgeTo[j]]) out.edge(id, chars.edgeLo[j], chars.edgeHi[j], get(chars.edgeTo[j], next));
    }
  }
  return { nfa: out, frag: { start, end } };
}
