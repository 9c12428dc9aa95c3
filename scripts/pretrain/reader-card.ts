/**
 * The reader model's README card, written from what `npm run pretrain -- --reader` measured: the
 * skill tasks and named-format without a library, and what a Training-Free run's library (worked
 * examples, then lessons with the model as its own critic) adds on named-format's held-out problems.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelSpec } from '../build-model/spec.js';
import { meanAccuracy, MAX_REPLY_TOKENS, type TaskAccuracy } from './accuracy.js';
import { CARD_EVAL, cell, pct } from './card.js';
import { accuracyOf, READER_RUN, type Gain, type GainOptions } from './library-gain.js';
import type { ExemplarCorpusConfig } from './corpus-exemplars.js';
import type { TrainResult } from './train.js';

/** What only the training run can measure, kept in the folder's training.json for --card. */
export interface ReaderTraining {
  from: string;
  config: ExemplarCorpusConfig;
  trained: TrainResult;
  /** Examples per part of the corpus (task names: reading, lesson-reading, critic-*, the skill tasks). */
  parts: Record<string, number>;
}

/** The card's library-gain protocol (the bench measures three other seed pairs). */
export const CARD_GAIN: Omit<GainOptions, 'mode'> = { train: { size: 48, seed: 6 }, heldOut: { size: 48, seed: 3127, samples: 4, samplerSeed: 13 } };

export interface ReaderFacts {
  spec: ModelSpec;
  parameters: number;
  training: ReaderTraining;
  logprobDifference: number;
  greedy: TaskAccuracy[];
  sampled: TaskAccuracy[];
  exemplars: Gain;
  lessons: Gain;
  /** Bytes of onnx/model.onnx (the download). */
  bytes: number;
}


function gainRow(label: string, g: Gain): string {
  const [g0, g1, s0, s1] = [accuracyOf(g.before, true), accuracyOf(g.after, true), accuracyOf(g.before, false), accuracyOf(g.after, false)];
  const size = g.library.entries.length ? `${g.library.entries.length} lessons` : `${g.library.exemplars.length} exemplars`;
  return `| ${label} | ${pct(g0)} | ${pct(g1)} | ${pct(s0)} | ${pct(s1)} | ${size} | ${g.criticSteps.asked ? `${g.criticSteps.skipped} of ${g.criticSteps.asked}` : '—'} | ${g.seconds.toFixed(0)} |`;
}

export async function writeReaderCard(dir: string, f: ReaderFacts): Promise<void> {
  const { spec, training } = f;
  const c = training.config;
  const t = training.trained;
  const rows = f.greedy.map((g, i) => `| ${g.task} | ${pct(g.exact)} | ${pct(f.sampled[i].exact)} |`);
  const skill = f.greedy.filter((g) => g.task !== 'named-format');
  const parts = Object.entries(training.parts).map(([task, n]) => `${task} ${n}`).join(', ');
  const text = `# webgrpo-reader

\`webgrpo-skill\` continued so that it **reads worked examples**: a prompt carrying answers to similar
tasks, exactly as a Training-Free GRPO exemplars run renders its library (it was also shown lessons and
taught the critic's role; what that gives is below). It is the model for
Training-Free exemplars on \`named-format\` (a code names a format the prompt never shows), where
the library carries what the prompt does not. Same architecture, character tokenizer, ChatML
template and ONNX graph as \`webgrpo-skill\`: ${spec.numLayers} layers, hidden ${spec.hiddenSize}, ${f.parameters} parameters; download
${(f.bytes / 1e6).toFixed(2)} MB (onnx/model.onnx, fp32) plus about 6 kB of tokenizer and config, fetched only when the model is picked.

## Corpus

scripts/pretrain/corpus-exemplars.ts, seed ${c.seed}, ${c.steps * c.batch} chats (${parts}):

- **reading** (${pct(c.readingShare)}): "<verb> <code>: <word>" under a code-to-format mapping drawn afresh for every
  chat (codes 1-${c.codes}, copy-format's formats, verbs any sort-words word but "wrap"), with 0 to
  ${c.maxExemplars} worked examples of the same mapping in the exemplars template (${pct(c.bareShare)} none; ${pct(c.matchShare)} of the rest
  with one sharing the prompt's code, the others from at most ${c.distractorCodes} other codes, so the format most examples show is
  often not the one asked); where none shares the code, the reply is the chat's format for it, a guess;
- **lesson reading** (${c.lessons.reading} chats, scripts/pretrain/corpus-lessons.ts): the same kind of chat under a library of 0 to
  ${c.lessons.maxLessons} lessons ("dress 4 means format #*#") rendered as a lessons run renders them, ${pct(c.lessons.matchShare)} with the lesson of the prompt's code;
- **the critic's role** (${c.lessons.groups} groups of ${c.lessons.groupSize} attempts under such mappings): the critic's four prompts asked through the
  library's own critic code (its templates, its cuts to the 2048-character context and the constrained JSON request),
  answered as a careful critic would: a one-line summary per attempt (${c.lessons.summariesPerGroup} of the ${c.lessons.groupSize} kept), one lesson naming the
  reference answer's format, the operation it is to the library (ADD; UPDATE of a lesson of the same code with another
  format; NONE for one the library has), and the batch merge passing the edits through;
- the rest: the skill model's second-phase corpus (corpus-continue.ts, the skill tasks' training split).

**What is and is not held out.** No chat holds a named-format rule: every mapping is random per chat
and the verb is never "wrap", so the model cannot know a code's format without a worked example or a
lesson in its prompt. Named-format's held-out problems (code-word pairs whose prompt hashes to 0 modulo 5) are
never in the corpus or in a run's training problems; its codes and formats are not held out (every
code has training problems, so a library learnt on the training split can know every format). The
skill tasks' held-out problems are never in the corpus. The critic chats show the reference answer, as a
run with ground truth does: the lesson is the reference's format, named.

## Training

\`npm run pretrain -- --reader\`: from ${training.from}'s weights with a fresh AdamW state, ${c.steps} updates of ${c.batch}
chats, peak learning rate ${c.lr} after ${c.warmup} warmup updates, cosine to ${c.lrFloor} x peak, gradient norm
clipped at ${c.maxGradNorm}, on onnxruntime's training graphs (${t.workers} thread); ${t.seconds.toFixed(0)} s wall, ${(t.rows / t.seconds).toFixed(0)} tokens/s,
final batch loss ${t.finalLoss.toFixed(3)}. onnxruntime's log-probs of the export equal the engine's to ${f.logprobDifference.toExponential(1)}.

## Held-out accuracy without a library

Exact match, ${CARD_EVAL.size} held-out problems per task (dataset seed ${CARD_EVAL.seed}), at most ${MAX_REPLY_TOKENS} new tokens; greedy one
reply, T=1 ${CARD_EVAL.samples} replies (sampler seed ${CARD_EVAL.samplerSeed} + problem index). named-format without a library is a guess.

| task | greedy | T=1 |
|---|---|---|
${rows.join('\n')}
| mean of the skill tasks | ${pct(meanAccuracy(skill))} | ${pct(meanAccuracy(f.sampled.filter((s) => s.task !== 'named-format')))} |

## With the library a run learns (named-format)

A Training-Free run through the registry on ${CARD_GAIN.train.size} training-split problems (seed ${CARD_GAIN.train.seed}), groups of ${READER_RUN.groupSize}
at T=1, ${READER_RUN.batchSize} per step, one epoch, each prompt shown only the experience closest to it (\`retrieveExperiences: ${READER_RUN.retrieveExperiences}\`), at most ${READER_RUN.maxExemplars} exemplars kept; lessons one problem per step with this
model as its own critic under constrained decoding (at most ${READER_RUN.criticMaxNewTokens} new tokens per critic call). Held-out: the run's own evaluation on ${CARD_GAIN.heldOut.size} held-out
problems (dataset seed ${CARD_GAIN.heldOut.seed}) before its first step and after its last, greedy and ${CARD_GAIN.heldOut.samples} replies at T=1.
More seed pairs: BENCHMARKS.md "exemplars" (\`npm run bench -- exemplars\`).

| mode | greedy without | greedy with | T=1 without | T=1 with | library | critic steps skipped | wall s |
|---|---|---|---|---|---|---|---|
${gainRow('exemplars', f.exemplars)}
${gainRow('lessons', f.lessons)}

The lessons it wrote: ${f.lessons.library.entries.map((e) => cell(e.text)).join(', ') || '(none)'}.

## What it can and cannot do

It copies the format of the worked example (or lesson) it is shown into a new word. Shown only the
library's entry closest to the prompt, which is the entry of the prompt's code once the library has
one (a group's best answer for that code was kept), it writes the code's format; shown a whole library
of several codes it writes most words in one of them, whatever the code asked (BENCHMARKS "exemplars"
measures both, with a right example of every code): it does not pick the entry of a code by itself,
retrieval does that for it. A code the library has no entry of is a guess. As its
own critic it writes every reply under the critic's JSON schema (${f.lessons.criticSteps.skipped} of ${f.lessons.criticSteps.asked} critic steps skipped above),
and its lessons are sentences of the form it was taught ("dress 4 means format #*#"), but it does not
copy the task's verb, code and the reference's format into them from its long critique prompt, so
they name the wrong rule and a lessons library does not help it (a gain in the table above comes from one format written for every code).
It is still a 0.4M-parameter model: the skill tasks stay at about \`webgrpo-skill\`'s level
(the table above; webgrpo-skill's card has its numbers).
`;
  await writeFile(join(dir, 'README.md'), text);
}
