/**
 * The reader model's README card, written from what `npm run pretrain -- --reader` measured: the
 * skill tasks and named-format without a library, and what a Training-Free run's library (worked
 * examples, then lessons with the model as its own critic) adds on named-format's held-out problems.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelSpec } from '../build-model/spec.js';
import { meanAccuracy, MAX_REPLY_TOKENS, type TaskAccuracy } from './accuracy.js';
import { CARD_EVAL } from './card.js';
import { accuracyOf, READER_RUN, type Gain, type GainOptions } from './library-gain.js';
import type { ReaderTraining } from './reader.js';

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

const cell = (text: string) => JSON.stringify(text).replaceAll('|', '\\|').replaceAll('`', '\\`');
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

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

\`webgrpo-skill\` continued so that it **reads experience and writes it**: worked examples and short
lessons in its prompt, exactly as a Training-Free GRPO run renders its library, and the critic's
four prompts of a lessons run (a summary per attempt, the group critique, the group update, the batch
merge). It is the model for Training-Free GRPO on \`named-format\` (a code names a format the prompt
never shows), where the library carries what the prompt does not. Same architecture, character
tokenizer, ChatML template and ONNX graph as \`webgrpo-skill\`: ${spec.numLayers} layers, hidden ${spec.hiddenSize}, ${f.parameters} parameters;
download ${(f.bytes / 1e6).toFixed(2)} MB (onnx/model.onnx, fp32) plus about 6 kB of tokenizer and config.

## Corpus

scripts/pretrain/corpus-reader.ts, seed ${c.seed}, ${c.steps * c.batch} chats (${parts}):

- **reading worked examples** (${pct(c.exemplarReadingShare)}): "<verb> <code>: <word>" under a code-to-format mapping
  drawn afresh for every chat (codes 1-${c.codes}, distinct copy-format formats, verbs any sort-words word),
  with 0 to ${c.maxShown} worked examples of the same mapping in the exemplars template (${pct(c.bareShare)} none;
  ${pct(c.matchShare)} of the rest name the prompt's code, several examples may share a code);
- **reading lessons** (${pct(c.lessonReadingShare)}): the same, the library as lessons in the lessons template
  ("[G3] wrap 4: write the word as #word#.", one per code);
- **being the critic** (${pct(c.criticShare)}): the prompts of lessons runs on such mappings, made by the method's own
  code (\`critiqueGroup\`, \`mergeAndApply\`) and cut to a ${c.context}-token context with ${c.criticMaxNewTokens} reply tokens as a run
  cuts them; the replies: a one-line summary ("Wrong: the reference answer is #hen#."), one lesson
  naming the code's rule read off the reference answer, ADD / UPDATE / NONE against the listed library,
  and a merge keeping one operation per code, as the bare JSON the constrained prompts ask for;
- the rest: the skill model's second-phase corpus (corpus-continue.ts, the skill tasks' training split).

**What is and is not held out.** No chat holds a named-format rule: every mapping is random per chat,
so "wrap" (among the verbs) never means the same format twice, and the model cannot know a code's
format without a worked example or a lesson in its prompt. Named-format's held-out problems
(code-word pairs whose prompt hashes to 0 modulo 5) are never in the corpus or in a run's training
problems; its codes and formats are not held out (every code has training problems, so a library
learnt on the training split can know every format). The skill tasks' held-out problems are never
in the corpus.

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
at T=1, ${READER_RUN.batchSize} per step, one epoch, exemplars kept only when right (\`exemplarThreshold: ${READER_RUN.exemplarThreshold}\`), at most
${READER_RUN.maxExemplars}, \`experienceTokenBudget: ${READER_RUN.experienceTokenBudget}\`; lessons with this model as its own critic under constrained
decoding (at most ${READER_RUN.criticMaxNewTokens} new tokens per critic call). Held-out: the run's own evaluation on ${CARD_GAIN.heldOut.size} held-out
problems (dataset seed ${CARD_GAIN.heldOut.seed}) before its first step and after its last, greedy and ${CARD_GAIN.heldOut.samples} replies at T=1.
More seed pairs: BENCHMARKS.md "exemplars" (\`npm run bench -- exemplars\`).

| mode | greedy without | greedy with | T=1 without | T=1 with | library | critic steps skipped | wall s |
|---|---|---|---|---|---|---|---|
${gainRow('exemplars', f.exemplars)}
${gainRow('lessons', f.lessons)}

The lessons it wrote: ${f.lessons.library.entries.map((e) => cell(e.text)).join(', ') || '(none)'}.

## What it can and cannot do

It reads a worked example or a lesson of a code and writes a new word in that code's format; as
its own critic it writes one-sentence lessons naming a code's rule. It is still a 0.4M-parameter
model: the skill tasks stay at about \`webgrpo-skill\`'s level or below (the table above; webgrpo-skill's
card has its numbers), and lessons on tasks other than named-format are not what it was taught.
`;
  await writeFile(join(dir, 'README.md'), text);
}
