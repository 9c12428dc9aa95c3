/**
 * Does the library a Training-Free run learns help? On named-format (a code names a format the
 * prompt never shows), the shipped reader model (public/models/webgrpo-reader, `npm run pretrain
 * -- --reader`) and, as the baseline, the bundled `webgrpo-skill`: per seed pair, a run started
 * through the registry on training-split problems (scripts/pretrain/library-gain.ts) and its own
 * held-out evaluation before its first step (no library) and after its last (the library it
 * learnt), greedy and T=1; exemplars mode, then lessons with the model as its own critic (critic
 * steps skipped counted). Then what the reader costs the skill tasks it inherited.
 */
import { fileURLToPath } from 'node:url';
import type { EvaluationRecord } from '../../lib/index.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { namedFormat, skillTasks } from '../../lib/tasks.js';
import { skillAccuracy } from '../pretrain/accuracy.js';
import { CARD_EVAL } from '../pretrain/card.js';
import { accuracyOf, libraryGain, READER_RUN, type Gain } from '../pretrain/library-gain.js';
import { libraryCeiling, type CeilingReading, type LibraryCeiling } from '../pretrain/library-ceiling.js';
import { SKILL_DIR } from './_skill-grpo.js';

const READER_DIR = fileURLToPath(new URL('../../public/models/webgrpo-reader', import.meta.url));
/**
 * Seed pairs (training problems and run, held-out problems) that no training of the reader used.
 * The run settings (one experience per prompt, 24 exemplars kept) were chosen on the first three;
 * the last three were run once, after.
 */
const PAIRS = [
  { train: 101, heldOut: 5101 },
  { train: 202, heldOut: 6202 },
  { train: 303, heldOut: 7303 },
  { train: 404, heldOut: 8404 },
  { train: 505, heldOut: 9505 },
  { train: 606, heldOut: 10606 },
];
const UNTUNED = PAIRS.slice(3);
const TRAIN_SIZE = 48;
const HELD_OUT = { size: 48, samples: 4, samplerSeed: 13 };

const pct = (x: number) => (100 * x).toFixed(1);
const signed = (x: number) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;
const cell = (text: string) => JSON.stringify(text).replaceAll('|', '\\|').replaceAll('`', '\\`');

interface Row {
  model: string;
  mode: 'exemplars' | 'lessons';
  pair: (typeof PAIRS)[number];
  gain: Gain;
}

export async function run(): Promise<string> {
  const rows: Row[] = [];
  const ceilings: Array<{ model: string; pair: (typeof PAIRS)[number]; ceiling: LibraryCeiling }> = [];
  for (const [model, dir, modes, pairs] of [
    ['webgrpo-reader', READER_DIR, ['exemplars', 'lessons'], PAIRS],
    ['webgrpo-skill (bundled)', SKILL_DIR, ['exemplars', 'lessons'], PAIRS.slice(0, 1)],
  ] as const) {
    const policy = await loadOnnxPolicy({ model: dir });
    try {
      for (const mode of modes) {
        for (const pair of pairs) {
          console.log(`  ${model} ${mode} seeds ${pair.train}/${pair.heldOut}…`);
          const gain = await libraryGain(policy, { mode, train: { size: TRAIN_SIZE, seed: pair.train }, heldOut: { ...HELD_OUT, seed: pair.heldOut } });
          rows.push({ model, mode, pair, gain });
        }
      }
      for (const pair of pairs) ceilings.push({ model, pair, ceiling: await libraryCeiling(policy, { trainSeed: pair.train, heldOut: { size: HELD_OUT.size, seed: pair.heldOut } }) });
    } finally {
      await policy.dispose();
    }
  }
  const costs: Array<{ model: string; greedy: number[] }> = [];
  for (const [model, dir] of [['webgrpo-skill (bundled)', SKILL_DIR], ['webgrpo-reader', READER_DIR]] as const) {
    const policy = await loadOnnxPolicy({ model: dir });
    costs.push({ model, greedy: (await skillAccuracy(policy, skillTasks, { ...CARD_EVAL, temperature: 0, samples: 1 })).map((a) => a.exact) });
    await policy.dispose();
  }

  const table = rows.map(({ model, mode, pair, gain }) => {
    const [g0, g1, s0, s1] = [accuracyOf(gain.before, true), accuracyOf(gain.after, true), accuracyOf(gain.before, false), accuracyOf(gain.after, false)];
    const size = mode === 'lessons' ? `${gain.library.entries.length} lessons` : `${gain.library.exemplars.length} exemplars`;
    const skipped = mode === 'lessons' ? `${gain.criticSteps.skipped} of ${gain.criticSteps.asked}` : '—';
    return `| ${model} | ${mode} | ${pair.train} / ${pair.heldOut} | ${pct(g0)} | ${pct(g1)} | ${signed(g1 - g0)} | ${pct(s0)} | ${pct(s1)} | ${signed(s1 - s0)} | ${size} | ${skipped} | ${gain.seconds.toFixed(0)} |`;
  });
  const reader = rows.filter((r) => r.model === 'webgrpo-reader');
  const mean = (mode: Row['mode'], greedy: boolean, pairs: readonly (typeof PAIRS)[number][] = PAIRS) => {
    const of = reader.filter((r) => r.mode === mode && pairs.includes(r.pair));
    return of.reduce((s, r) => s + accuracyOf(r.gain.after, greedy) - accuracyOf(r.gain.before, greedy), 0) / of.length;
  };
  const constants = PAIRS.map((pair) => {
    const answers = namedFormat.dataset({ size: HELD_OUT.size, seed: pair.heldOut }).map((item) => item.answer as string);
    return Math.max(...answers.map((a) => answers.filter((b) => b === a).length)) / answers.length;
  });
  const written = (r: CeilingReading) =>
    Object.entries(r.formats)
      .sort((a, b) => b[1] - a[1])
      .map(([format, n]) => `${format === 'other' ? 'other' : cell(format)} ${n}`)
      .join(', ');
  const ceilingTable = ceilings.map(
    ({ model, pair, ceiling: { whole, closest, oneFormat } }) =>
      `| ${model} | ${pair.heldOut} | ${pct(whole.exemplars.accuracy)} | ${written(whole.exemplars)} | ${pct(whole.lessons.accuracy)} | ${written(whole.lessons)} | ${pct(closest.exemplars.accuracy)} | ${pct(closest.lessons.accuracy)} | ${pct(oneFormat.accuracy)} (${cell(oneFormat.format)}) |`,
  );
  const first = reader.filter((r) => r.pair === PAIRS[0]);
  const shown = namedFormat.dataset({ size: 4, seed: PAIRS[0].heldOut });
  const replies = (record: EvaluationRecord) => shown.map((_, i) => cell(record.greedyPass!.items[i]?.samples[0]?.text ?? '')).join(', ');
  return [
    '## exemplars: the library a run learns, with and without it, on the reader model',
    '',
    `named-format (write a word in the format a code names, "wrap 4: owl" -> "#owl#"; 6 codes whose formats the prompt never shows). Models: \`webgrpo-reader\` (public/models/webgrpo-reader: webgrpo-skill continued on the reading corpus, scripts/pretrain/corpus-exemplars.ts, with lessons and critic chats from corpus-lessons.ts, in which every code-to-format mapping is random per chat and the verb is never "wrap", so no named-format rule is in its weights; its card says what is held out) and the bundled \`webgrpo-skill\` as the baseline. Per seed pair a Training-Free run through the registry (\`startRun(methodOf('training-free'), options)\`) on ${TRAIN_SIZE} training-split problems (the pair's first seed, also the run's), groups of ${READER_RUN.groupSize} at T=1, ${READER_RUN.batchSize} problems per step, one epoch, at most ${READER_RUN.maxNewTokens} new tokens, each prompt shown only the experience closest to it (\`retrieveExperiences: ${READER_RUN.retrieveExperiences}\`: shared words and word pairs, the rarer counting more), at most ${READER_RUN.maxExemplars} exemplars kept; lessons one problem per step (so the batch merge's one operation is not cut), the model as its own critic (constrained decoding, at most ${READER_RUN.criticMaxNewTokens} new tokens per critic call). Held-out: the run's own evaluation on ${HELD_OUT.size} held-out problems (the pair's second seed) before its first step (no library) and after its last (the library it learnt), exact match, one greedy reply and ${HELD_OUT.samples} at T=1 (sampler seed ${HELD_OUT.samplerSeed}). No pair here trained the reader; the run settings were chosen on the first three pairs, and the last three (${UNTUNED.map((p) => `${p.train} / ${p.heldOut}`).join(', ')}) were run once, after. A constant reply scores at most ${constants.map(pct).join('%, ')}% on the six held-out sets.`,
    '',
    '| model | mode | seeds (train / held-out) | greedy without % | greedy with % | Δ | T=1 without % | T=1 with % | Δ | library | critic steps skipped | wall s |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|',
    ...table,
    '',
    `Mean over the six pairs on the reader: exemplars ${signed(mean('exemplars', true))} greedy, ${signed(mean('exemplars', false))} T=1; lessons ${signed(mean('lessons', true))} greedy, ${signed(mean('lessons', false))} T=1. Over the three run once, after the settings were chosen: exemplars ${signed(mean('exemplars', true, UNTUNED))} greedy, ${signed(mean('exemplars', false, UNTUNED))} T=1; lessons ${signed(mean('lessons', true, UNTUNED))} greedy, ${signed(mean('lessons', false, UNTUNED))} T=1.`,
    '',
    `The most a library can give, and what ignoring the code scores (scripts/pretrain/library-ceiling.ts): greedy held-out exact match on the same held-out problems under the best library a run could learn, one right worked example of every code (the first training-split problem of each code, the pair's first seed) or one right lesson of every code ("wrap 4 means format #*#", the form the reader's corpus teaches), shown whole (with the formats the replies are written in, of ${HELD_OUT.size}) or only the entry closest to the prompt; and the best score of one format for every word. Shown whole, a model that reads its library by the code comes near 100%; one that copies a format it sees, whatever the code, scores at most the last column. Shown only the closest entry, which is its own code's, copying is enough.`,
    '',
    '| model | held-out seed | whole: every code\'s worked example % | formats written | whole: every code\'s lesson % | formats written | closest worked example % | closest lesson % | one format for every word % |',
    '|---|---|---:|---|---:|---|---:|---:|---:|',
    ...ceilingTable,
    '',
    `What the reader writes (greedy, held-out ${shown.map((i) => cell(i.messages![0].content as string)).join(', ')}; answers ${shown.map((i) => cell(i.answer as string)).join(', ')}; seeds ${PAIRS[0].train} / ${PAIRS[0].heldOut}):`,
    '',
    ...first.flatMap((r) => [
      `- ${r.mode}, without the library: ${replies(r.gain.before)}`,
      `- ${r.mode}, with the library: ${replies(r.gain.after)}`,
      r.mode === 'exemplars'
        ? `  - library (first 6 of ${r.gain.library.exemplars.length}): ${r.gain.library.exemplars.slice(0, 6).map((e) => `${cell(e.item)} -> ${cell(e.output)}`).join(', ')}`
        : `  - lessons: ${r.gain.library.entries.map((e) => cell(e.text)).join(', ') || '(none)'}`,
    ]),
    '',
    `What the reader costs the skill tasks (greedy held-out exact match, the cards' ${CARD_EVAL.size} problems per task, seed ${CARD_EVAL.seed}):`,
    '',
    `| model | ${skillTasks.map((t) => `${t.name} %`).join(' | ')} |`,
    `|---|${skillTasks.map(() => '---:').join('|')}|`,
    ...costs.map((c) => `| ${c.model} | ${c.greedy.map(pct).join(' | ')} |`),
    '',
  ].join('\n');
}
