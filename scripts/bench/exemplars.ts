/**
 * An experiment, not a shipped model: does a model taught to read worked examples gain from the
 * library a Training-Free exemplars run learns? The bundled `webgrpo-skill` is continued on the
 * reading corpus (scripts/pretrain/corpus-exemplars.ts: random per-chat code-to-format mappings
 * under verbs other than "wrap", shown as the exemplars template renders them) into a temporary
 * folder, never public/models. Then, for the bundled and the continued model alike:
 *  - named-format: a Training-Free exemplars run started through the registry
 *    (`startRun(methodOf('training-free'), options)`) on training-split problems; its own held-out evaluation
 *    before the first step (no library) and after the last (the library it learnt), greedy and T=1;
 *  - copy-format and sort-words: greedy held-out exact match (the card's problems), what shipping
 *    the continued model would cost the tasks it already does.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import type { EvaluationRecord, ExperienceLibrary } from '../../lib/index.js';
import { readDecoderWeights } from '../../lib/lora/onnx-weights.js';
import { methodOf, startRun } from '../../lib/method.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { copyFormat, namedFormat, sortWords } from '../../lib/tasks.js';
import { buildModel } from '../build-model/index.js';
import { MAX_REPLY_TOKENS, skillAccuracy } from '../pretrain/accuracy.js';
import { CARD_EVAL } from '../pretrain/card.js';
import { SKILL_SPEC } from '../pretrain/config.js';
import { buildExemplarCorpus, EXEMPLAR_CONTINUE } from '../pretrain/corpus-exemplars.js';
import { pretrain } from '../pretrain/train.js';
import { toBuilder } from '../pretrain/weights.js';
import { SKILL_DIR } from './_skill-grpo.js';

const OUT = process.env.EXEMPLARS_OUT ?? join(tmpdir(), 'skill-exemplars');
/** The run's training problems (train split), replies per problem, problems per step, seed. */
const TRAIN = { size: 48, seed: 6, groupSize: 8, batchSize: 4 };
/** Held-out named-format problems: a dataset seed no other bench or tuning here used. */
const EVAL = { size: 48, seed: 3127, samples: 4, samplerSeed: 13 };

const pct = (x: number | null | undefined) => (x === null || x === undefined ? '—' : (100 * x).toFixed(1));
const signed = (x: number) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;
const cell = (text: string) => JSON.stringify(text).replaceAll('|', '\\|').replaceAll('`', '\\`');

interface Measured {
  label: string;
  before: EvaluationRecord;
  after: EvaluationRecord;
  library: ExperienceLibrary;
  seconds: number;
  copyFormat: number;
  sortWords: number;
}

async function measure(label: string, model: string): Promise<Measured> {
  const policy = await loadOnnxPolicy({ model });
  try {
    const dataset = namedFormat.dataset({ size: TRAIN.size, seed: TRAIN.seed, split: 'train' });
    const heldOut = namedFormat.dataset({ size: EVAL.size, seed: EVAL.seed });
    const started = performance.now();
    const run = startRun(methodOf('training-free')!, {
      policy,
      dataset,
      rewards: namedFormat.rewards,
      task: namedFormat.name,
      mode: 'exemplars',
      groupSize: TRAIN.groupSize,
      batchSize: TRAIN.batchSize,
      epochs: 1,
      temperature: 1,
      maxNewTokens: MAX_REPLY_TOKENS,
      seed: TRAIN.seed,
      evaluation: { dataset: heldOut, temperature: 1, samples: EVAL.samples, alsoGreedy: true, seed: EVAL.samplerSeed, correct: { reward: 'exact' } },
    });
    const evaluations: EvaluationRecord[] = [];
    for await (const event of run as AsyncIterable<{ type: string } & Record<string, unknown>>) {
      if (event.type === 'eval') evaluations.push(event.evaluation as EvaluationRecord);
    }
    const seconds = (performance.now() - started) / 1000;
    const library = ((await run.result()) as { library: ExperienceLibrary }).library;
    const greedy = await skillAccuracy(policy, [copyFormat, sortWords], { ...CARD_EVAL, temperature: 0, samples: 1 });
    return { label, before: evaluations[0], after: evaluations.at(-1)!, library, seconds, copyFormat: greedy[0].exact, sortWords: greedy[1].exact };
  } finally {
    await policy.dispose();
  }
}

export async function run(): Promise<string> {
  const weights = await readDecoderWeights(new Uint8Array(await readFile(join(SKILL_DIR, 'onnx/model.onnx'))), {
    config: JSON.parse(await readFile(join(SKILL_DIR, 'config.json'), 'utf8')),
  });
  const corpus = buildExemplarCorpus(EXEMPLAR_CONTINUE);
  console.log(`  continuing on ${corpus.length} examples (${corpus.filter((e) => e.task === 'reading').length} reading chats) into ${OUT}…`);
  const trained = await pretrain(weights, corpus, EXEMPLAR_CONTINUE, (l) => console.log(`  step ${l.step}  loss ${l.loss.toFixed(4)}  ${l.seconds.toFixed(0)} s`));
  await buildModel(SKILL_SPEC, OUT, toBuilder(weights));

  const measured: Measured[] = [];
  for (const [label, model] of [['bundled webgrpo-skill', SKILL_DIR], ['continued (reading corpus)', OUT]] as const) {
    console.log(`  ${label}…`);
    measured.push(await measure(label, model));
  }
  const accuracy = (e: EvaluationRecord, greedy: boolean) => (greedy ? e.greedyPass!.summary.accuracy : e.summary.accuracy) ?? 0;
  const rows = measured.map((m) => {
    const [g0, g1, s0, s1] = [accuracy(m.before, true), accuracy(m.after, true), accuracy(m.before, false), accuracy(m.after, false)];
    return `| ${m.label} | ${pct(g0)} | ${pct(g1)} | ${signed(g1 - g0)} | ${pct(s0)} | ${pct(s1)} | ${signed(s1 - s0)} | ${m.library.exemplars.length} | ${m.seconds.toFixed(0)} |`;
  });
  const heldOut = namedFormat.dataset({ size: EVAL.size, seed: EVAL.seed });
  const answers = heldOut.map((item) => item.answer as string);
  const constant = Math.max(...answers.map((a) => answers.filter((b) => b === a).length)) / answers.length;
  const shown = heldOut.slice(0, 4);
  const replies = (record: EvaluationRecord) => shown.map((_, i) => cell(record.greedyPass!.items[i]?.samples[0]?.text ?? '')).join(', ');
  const c = EXEMPLAR_CONTINUE;
  return [
    '## exemplars: a model taught to read worked examples, with and without the library a run learnt',
    '',
    `An experiment; the bundled model is unchanged. The bundled \`webgrpo-skill\` continued for ${c.steps} updates of ${c.batch} (lr ${c.lr}, ${trained.seconds.toFixed(0)} s) on the opt-in reading corpus (scripts/pretrain/corpus-exemplars.ts): ${pct(c.readingShare)}% chats "<verb> <code>: <word>" under a code-to-format mapping drawn afresh per chat (codes 1-${c.codes}, copy-format's formats, verbs any word but "wrap", so no named-format rule is in it), with 0-${c.maxExemplars} worked examples in the exemplars template (${pct(c.bareShare)}% none; ${pct(c.matchShare)}% of the rest with one sharing the prompt's code), the rest the second phase's corpus (seed ${c.seed}). Written to a temporary folder, not public/models.`,
    '',
    `named-format through the registry (\`startRun(methodOf('training-free'), options)\`, \`mode: 'exemplars'\`): ${TRAIN.size} training-split problems (seed ${TRAIN.seed}), groups of ${TRAIN.groupSize} at T=1, ${TRAIN.batchSize} per step, one epoch; the run's own held-out evaluation on ${EVAL.size} held-out problems (dataset seed ${EVAL.seed}, used by no tuning) before its first step (no library) and after its last (the library it learnt), exact match, ${EVAL.samples} replies at T=1 (sampler seed ${EVAL.samplerSeed}) and one greedy. A constant reply scores at most ${pct(constant)}%.`,
    '',
    '| model | greedy without % | greedy with library % | Δ | T=1 without % | T=1 with library % | Δ | exemplars | wall s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `What the models write (greedy, held-out ${shown.map((i) => cell(i.messages![0].content as string)).join(', ')}; answers ${shown.map((i) => cell(i.answer as string)).join(', ')}):`,
    '',
    ...measured.flatMap((m) => [
      `- ${m.label}, without: ${replies(m.before)}`,
      `- ${m.label}, with the library: ${replies(m.after)}`,
      `  - library (first 4 of ${m.library.exemplars.length}): ${m.library.exemplars.slice(0, 4).map((e) => `${cell(e.item)} -> ${cell(e.output)}`).join(', ')}`,
    ]),
    '',
    `What the continuation costs (greedy held-out exact match, the card's ${CARD_EVAL.size} problems per task, seed ${CARD_EVAL.seed}):`,
    '',
    '| model | copy-format % | sort-words % |',
    '|---|---:|---:|',
    ...measured.map((m) => `| ${m.label} | ${pct(m.copyFormat)} | ${pct(m.sortWords)} |`),
    '',
  ].join('\n');
}
