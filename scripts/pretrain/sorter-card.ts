/**
 * The sorter model's README card, written from what its training run measured: architecture,
 * corpus, what is held out, training, the held-out sort-words profile (greedy, T=1, pass@8, what
 * the greedy replies are) and what the continuation left of the other skill tasks.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelSpec } from '../build-model/spec.js';
import { MAX_REPLY_TOKENS, type TaskAccuracy } from './accuracy.js';
import { CARD_EVAL, cell, pct } from './card.js';
import { SORTER_CHECKPOINT_EVERY, type SorterConfig } from './config.js';
import type { SorterProfile } from './sorter-profile.js';
import type { TrainResult } from './train.js';

/** The held-out profile's protocol: the teach benchmark's problems (96, dataset seed 2027), 8 replies at T=1. */
export const SORTER_PROFILE = { size: 96, seed: 2027, k: 8, samplerSeed: 2027 } as const;

/** What the training run was and measured (the model folder's training.json). */
export interface SorterTraining {
  from: string;
  config: SorterConfig;
  trained: TrainResult;
  /** Share of the corpus' sort-words replies that are right (a copied order of an already sorted prompt is). */
  corpusRight: number;
}

export interface SorterFacts {
  spec: ModelSpec;
  parameters: number;
  training: SorterTraining;
  logprobDifference: number;
  profile: SorterProfile;
  greedy: TaskAccuracy[];
  sampled: TaskAccuracy[];
  bytes: number;
}


export async function writeSorterCard(dir: string, f: SorterFacts): Promise<void> {
  const { spec, profile: p } = f;
  const { config: c, trained } = f.training;
  const right = 1 - c.copyShare - c.twiceShare - c.swapShare;
  const others = f.greedy.map((g, i) => `| ${g.task} | ${pct(g.exact)} | ${pct(f.sampled[i].exact)} |`);
  const examples = p.examples.map((e) => `| ${cell(e.prompt)} | ${cell(e.answer)} | ${cell(e.reply)} |`);
  const text = `# webgrpo-sorter

The playground's first-run model: \`webgrpo-skill\` continued mostly on sort-words, so that the
sorted answer is well inside the model's samples but often not its likeliest reply. On held-out
problems it sorts greedily on ${pct(p.greedy)} of them, while one of eight replies at temperature 1 is
right on ${pct(p.passAtK)}: the situation reinforcement learning with a verifiable reward is for, where
GRPO makes the right reply the likeliest (pass@1 rises towards pass@8). Same architecture,
character tokenizer, ChatML template and ONNX graph as \`webgrpo-skill\` (scripts/build-model);
loads in transformers.js, onnxruntime-web and onnxruntime-node.

## Architecture

| | |
|---|---|
| layers | ${spec.numLayers} |
| hidden size | ${spec.hiddenSize} |
| attention heads / key-value heads | ${spec.numHeads} / ${spec.numKvHeads} (head size ${spec.headDim}) |
| MLP (SwiGLU) | ${spec.intermediateSize} |
| head | tied to the embedding |
| parameters | ${f.parameters} (${(f.bytes / 1e6).toFixed(2)} MB file, fp32) |

## Corpus and what is held out

${c.steps * c.batch} chats (scripts/pretrain/corpus-sorter.ts, seed ${c.seed}): ${pct(1 - c.otherShare)} sort-words ("sort: owl cat fig"
-> "cat fig owl"; three or four of the task's 58 words), ${pct(c.otherShare)} the other three skill tasks as
webgrpo-skill's first corpus draws them (scripts/pretrain/corpus.ts, ${pct(c.otherWrongShare)} near misses), so the
model still answers them; all from the tasks' **training split** only.
Held out: every prompt whose FNV-1a hash is 0 modulo 5 (\`lib/tasks/split.ts\`), about one in five
word lists *in their given order*; no held-out prompt is in this corpus, nor in webgrpo-skill's, and
the task's dataset draws held-out prompts by default. The words, and the same words in another
order, do occur in training: what is held out is the exact problem, not the vocabulary.

The sort-words replies: ${pct(right)} right, ${pct(c.copyShare)} the words in the prompt's order (the input copied; right
when the prompt is already sorted, so ${pct(f.training.corpusRight)} of all sort-words replies are right), ${pct(c.twiceShare)} a word
written twice in place of the next ("cat cat owl", webgrpo-skill's own typical mistake), ${pct(c.swapShare)}
two adjacent words swapped. The copied order is one consistent wrong reply, likelier than the sorted
one, so the model's likeliest reply is often the copy while the sorted one stays in its samples.

## Training

\`npm run pretrain -- --sorter\` (scripts/pretrain/sorter.ts), from ${f.training.from}'s weights with a fresh
AdamW state: ${c.steps} updates of ${c.batch} chats (mean token negative log-likelihood per reply), peak learning
rate ${c.lr} after ${c.warmup} warmup updates, cosine to ${c.lrFloor} x peak, weight decay ${c.weightDecay}, gradient
norm clipped at ${c.maxGradNorm}; full-parameter gradients from onnxruntime's training graphs on
${trained.workers} thread; ${trained.seconds.toFixed(0)} s wall on a shared two-core machine, final batch loss
${trained.finalLoss.toFixed(3)}. The run writes a checkpoint (weights, AdamW's moments, the update count,
so the corpus position) every ${SORTER_CHECKPOINT_EVERY} updates in the output folder, and the same command run again after
a stop resumes from it and gives the unbroken run's weights, bit for bit; the checkpoint is deleted
once the model is written. onnxruntime's log-probs of the exported model equal the engine's to
${f.logprobDifference.toExponential(1)} (checked at export).

## Held-out sort-words profile

${p.problems} held-out problems (dataset seed ${SORTER_PROFILE.seed}, ${p.distinctAnswers} distinct answers: a constant
reply scores ${pct(p.constant)}), through the ONNX policy (Node CPU, at most ${MAX_REPLY_TOKENS} new tokens);
${p.k} replies per problem at temperature 1 (sampler seed ${SORTER_PROFILE.samplerSeed} + problem index).

| greedy | T=1 right | pass@${p.k} at T=1 |
|---:|---:|---:|
| ${pct(p.greedy)} | ${pct(p.sampled)} | ${pct(p.passAtK)} |

The greedy replies: ${pct(p.kinds.right)} right, ${pct(p.kinds.copy)} the prompt's order copied, ${pct(p.kinds.twice)} a word
written twice, ${pct(p.kinds.swap)} two words swapped, ${pct(p.kinds.other)} other; ${p.distinctGreedy} distinct replies of
${p.problems}, the most common ${pct(p.mostCommonGreedy)} of them.

| prompt | answer | greedy reply |
|---|---|---|
${examples.join('\n')}

What the first run (LoRA GRPO on sort-words) does with this model: BENCHMARKS.md, "teach".

## The other skill tasks

What the continuation left of the other tasks (webgrpo-skill's card has its own numbers; use
webgrpo-skill for them). Exact match, ${CARD_EVAL.size} held-out problems per task (seed
${CARD_EVAL.seed}), greedy and ${CARD_EVAL.samples} replies at T=1:

| task | greedy | T=1 |
|---|---|---|
${others.join('\n')}
`;
  await writeFile(join(dir, 'README.md'), text);
}
