/**
 * Constrained decoding: the cost per decoded token of the allowed-token mask, on the bundled
 * model's 102-token character vocabulary and on a 50k-token synthetic byte-level BPE vocabulary,
 * next to the obvious alternative (checking every token alone against the automaton) and to the
 * CPU sampling step the mask is added to. Token sequences come from seeded random walks, replayed
 * identically on every side; both sides are checked to agree before they are timed.
 */
import type { ResponseFormat } from '../../lib/index.js';
import { compileResponseFormat, countAllowed, criticOperationsSchema, isAllowed, type ResponseGrammar } from '../../lib/method.js';
import { mulberry32 } from '../../lib/math.js';
import { resolveSampling, sampleToken } from '../../lib/policy/sampling.js';
import { characterVocabulary, syntheticByteBpe, type TestVocabulary } from '../../test/fixtures/vocabularies.js';
import { performance } from 'node:perf_hooks';
import { measure, ms } from './_measure.js';
import { engineSection } from './_constrain-engine.js';

const FORMATS: Array<[string, ResponseFormat]> = [
  ['critic operations (default bounds)', { type: 'json_schema', schema: criticOperationsSchema() }],
  [
    'object: enum, integer, string ≤ 40, array ≤ 5',
    {
      type: 'json_schema',
      schema: {
        type: 'object',
        properties: {
          kind: { enum: ['a', 'b', 'c'] },
          n: { type: 'integer' },
          note: { type: 'string', maxLength: 40 },
          tags: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 5 },
        },
        required: ['kind', 'n', 'note', 'tags'],
        additionalProperties: false,
      },
    },
  ],
  ['json_object (any object, depth 4)', { type: 'json_object' }],
];

/** A completion drawn by a seeded walk (EOS once it is allowed and some closers preferred), 60-400 tokens. */
function walk(grammar: ResponseGrammar, tv: TestVocabulary, seed: number): number[] {
  const rng = mulberry32(seed);
  const m = grammar.matcher(tv.vocabulary);
  const ids: number[] = [];
  const n = tv.bytes.length;
  for (let step = 0; step < 400 && !m.isFinished(); step++) {
    const mask = m.allowed();
    const allowed: number[] = [];
    for (let id = 0; id < n; id++) if (isAllowed(mask, id)) allowed.push(id);
    let id = allowed[Math.floor(rng() * allowed.length)];
    if (step > 60) {
      // Head for the end: the allowed token leaving the fewest bytes to write.
      let best = Infinity;
      for (const candidate of allowed.filter((t) => tv.bytes[t].length <= 1 || tv.eosIds.includes(t))) {
        const c = m.clone();
        c.accept(candidate);
        const d = c.minBytesToComplete() + (c.isFinished() ? -1 : 0);
        if (d < best) [best, id] = [d, candidate];
      }
    }
    m.accept(id);
    ids.push(id);
  }
  return ids;
}

/** Median over runs of replaying `sequence` on a grammar compiled just before, untimed. */
function coldReplay(format: ResponseFormat, tv: TestVocabulary, sequence: number[]): number {
  const times: number[] = [];
  const start = performance.now();
  while (times.length < 5 || (performance.now() - start < 3000 && times.length < 40)) {
    const grammar = compileResponseFormat(format);
    const t0 = performance.now();
    const m = grammar.matcher(tv.vocabulary);
    for (const id of sequence) {
      m.allowed();
      m.accept(id);
    }
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

interface Row {
  vocab: string;
  format: string;
  states: string;
  tokens: number;
  cold: number;
  warm: number;
  naive: number;
  sample: number;
}

/** What the WebGPU path moves per step, which is a size, not a timing (no hardware GPU runs this bench). */
const WEBGPU_NOTE = [
  '### WebGPU',
  '',
  'On WebGPU the logits stay on the GPU and each constrained row\'s allowed tokens go to the',
  'sampling kernel as a bitset: ceil(V / 32) × 4 bytes per row and step (16 bytes for the bundled',
  "model's 102 tokens, 18,992 for a 151,936-token vocabulary), 32 times less than a float per token,",
  'and `policy.stats().maskBytes` counts it. The kernel drops the disallowed tokens before top-k,',
  'top-p, min-p and the draw. Not timed here: the only WebGPU on this machine is SwiftShader, a CPU',
  'emulation (test/constrain/browser.test.ts checks it for correctness).',
].join('\n');

export async function run(): Promise<string> {
  const vocabularies: Array<[string, TestVocabulary]> = [
    ['character (102)', characterVocabulary()],
    ['byte-level BPE (50k)', syntheticByteBpe(50_000)],
  ];
  const rows: Row[] = [];
  const compiles: string[] = [];
  for (const [formatName, format] of FORMATS) {
    const compileMs = measure(() => compileResponseFormat(format), { minTimeMs: 500, minRuns: 3, warmup: 1 }).medianMs;
    const probe = compileResponseFormat(format);
    compiles.push(`| ${formatName} | ${probe.automatonStates.toLocaleString('en')} | ${ms(compileMs)} |`);
    for (const [vocabName, tv] of vocabularies) {
      const n = tv.bytes.length;
      const sequence = walk(compileResponseFormat(format), tv, 1);
      const tokens = sequence.length;

      // Both sides agree on every step before anything is timed.
      const check = compileResponseFormat(format).matcher(tv.vocabulary);
      for (const id of sequence) {
        const mask = check.allowed();
        let naiveCount = 0;
        for (let t = 0; t < n; t++) naiveCount += check.canAccept(t) ? 1 : 0;
        if (naiveCount !== countAllowed(mask, n)) throw new Error(`mask and per-token check disagree on ${vocabName}, ${formatName}`);
        check.accept(id);
      }

      // Cold: a fresh grammar per run (compiled outside the timed region), so every DFA state and
      // mask met is computed on the way.
      const cold = coldReplay(format, tv, sequence);
      const warmGrammar = compileResponseFormat(format);
      const warm = measure(() => {
        const m = warmGrammar.matcher(tv.vocabulary);
        for (const id of sequence) {
          m.allowed();
          m.accept(id);
        }
      });
      const naiveGrammar = compileResponseFormat(format);
      const naive = measure(
        () => {
          const m = naiveGrammar.matcher(tv.vocabulary);
          const bits = new Uint32Array((n + 31) >>> 5);
          for (const id of sequence) {
            bits.fill(0);
            for (let t = 0; t < n; t++) if (m.canAccept(t)) bits[t >>> 5] |= 1 << (t & 31);
            m.accept(id);
          }
        },
        { minTimeMs: 1500, minRuns: 3, warmup: 1 },
      );
      const rng = mulberry32(3);
      const logits = Float32Array.from({ length: n }, () => (rng() - 0.5) * 8);
      const config = resolveSampling({ temperature: 0.8 });
      const scratch = new Float64Array(2 * n);
      const sample = measure(() => {
        for (let i = 0; i < 50; i++) sampleToken(logits, 0, n, config, i / 50, scratch);
      });
      rows.push({
        vocab: vocabName,
        format: formatName,
        states: warmGrammar.dfaStates.toLocaleString('en'),
        tokens,
        cold: (cold * 1000) / tokens,
        warm: (warm.medianMs * 1000) / tokens,
        naive: (naive.medianMs * 1000) / tokens,
        sample: (sample.medianMs * 1000) / 50,
      });
    }
  }
  const us = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  const lines = [
    '## constrain: allowed-token masks for structured output',
    '',
    'Cost per decoded token of `matcher.allowed()` + `matcher.accept(id)` along a seeded completion,',
    'in µs. *cold*: a fresh grammar, so every DFA state and mask met is computed on the way (a new',
    'schema\'s first request); *warm*: the same grammar again, masks cached per DFA state (later',
    'requests and the other rows of a group). *per-token check*: the obvious alternative, every token',
    'walked through the automaton alone at every step (`canAccept` over the vocabulary), timed on',
    'repeated runs, so with the DFA already built: a lower bound for it next to *cold*. *sampleToken*:',
    'the CPU sampling step over the same vocabulary (temperature 0.8, no filters), which the mask is',
    'added to.',
    '',
    '| vocabulary | format | DFA states | tokens | cold µs/token | warm µs/token | per-token check µs/token | per-token / cold | sampleToken µs |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.vocab} | ${r.format} | ${r.states} | ${r.tokens} | ${us(r.cold)} | ${us(r.warm)} | ${us(r.naive)} | ${(r.naive / r.cold).toFixed(1)}x | ${us(r.sample)} |`,
    ),
    '',
    'Compiling a format (schema → byte automaton; the DFA itself is built lazily while decoding):',
    '',
    '| format | automaton states | compile ms |',
    '| --- | ---: | ---: |',
    ...compiles,
    '',
    await engineSection(),
    '',
    WEBGPU_NOTE,
  ];
  return lines.join('\n');
}
