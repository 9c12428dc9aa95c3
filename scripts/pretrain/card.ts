/**
 * The skill model's README card, written from what the pretraining run measured. The accuracy
 * table's rows are `| task | greedy % | T=1 % |`, which the card's test parses and re-measures.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelSpec } from '../build-model/spec.js';
import { meanAccuracy, MAX_REPLY_TOKENS, type TaskAccuracy } from './accuracy.js';
import type { ContinueConfig, PretrainConfig } from './config.js';
import type { TrainResult } from './train.js';

/** The held-out protocol of the card: problems per task, their seed, replies per problem at T=1, sampler seed. */
export const CARD_EVAL = { size: 50, seed: 1000, samples: 4, samplerSeed: 0 } as const;

/** What the two training phases were and measured (the model folder's training.json). */
export interface PhaseFacts {
  config: PretrainConfig;
  trained: TrainResult;
  /** Set when phase 2 started from a phase-1 model on disk (`--from`) instead of training phase 1 in the same command. */
  continuedFrom?: string;
  continued: ContinueConfig;
  phase2: TrainResult;
}

export interface CardFacts {
  spec: ModelSpec;
  parameters: number;
  vocabSize: number;
  corpusSize: number;
  corpus2Size: number;
  training: PhaseFacts;
  logprobDifference: number;
  greedy: TaskAccuracy[];
  sampled: TaskAccuracy[];
  /** Share of the card's held-out count-letter problems whose answer is 1. */
  countLetterOnes: number;
}

/** A table cell for model output (untrusted text): quoted as JSON, pipes escaped, so no reply can break the table. */
export const cell = (text: string) => JSON.stringify(text).replaceAll('|', '\\|').replaceAll('`', '\\`');
/** A share as a percentage with one decimal. */
export const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

export async function writeCard(dir: string, f: CardFacts): Promise<void> {
  const { spec } = f;
  const { config, trained, continued, phase2 } = f.training;
  const speed = (t: TrainResult) => `${t.seconds.toFixed(0)} s wall, ${(t.rows / t.seconds).toFixed(0)} tokens/s forward and backward, final batch loss ${t.finalLoss.toFixed(3)}`;
  const shares = continued.taskShares.map((share, i) => `${f.greedy[i].task} ${pct(share)}`).join(', ');
  const rows = f.greedy.map((g, i) => `| ${g.task} | ${pct(g.exact)} | ${pct(f.sampled[i].exact)} |`);
  const examples = f.sampled.flatMap((s) => s.examples.slice(0, 2).map((e) => `| ${s.task} | ${cell(e.prompt)} | ${cell(e.reply)} | ${cell(e.answer)} |`));
  const text = `# webgrpo-skill

A small Llama-architecture model pretrained by webgrpo itself, so that GRPO has something real to
improve offline: it has a **partial** skill at four verifiable tasks (\`lib/tasks/skill.ts\`) and
samples wrong answers often enough that reward can sharpen it. Same character tokenizer, ChatML
chat template and ONNX graph as \`webgrpo-tiny\` (scripts/build-model); loads in transformers.js,
onnxruntime-web and onnxruntime-node.

## Architecture

| | |
|---|---|
| layers | ${spec.numLayers} |
| hidden size | ${spec.hiddenSize} |
| attention heads / key-value heads | ${spec.numHeads} / ${spec.numKvHeads} (head size ${spec.headDim}) |
| MLP (SwiGLU) | ${spec.intermediateSize} |
| vocabulary | ${f.vocabSize} (characters and ChatML specials) |
| head | tied to the embedding |
| parameters | ${f.parameters} (${((f.parameters * 4) / 1e6).toFixed(2)} MB fp32) |

## Corpus

Two phases, both drawn only from the tasks' training split: a problem whose prompt hashes to 0
modulo 5 (FNV-1a, \`lib/tasks/split.ts\`) is held out and never in the corpus, and the tasks'
datasets draw held-out problems by default. Each chat is
\`<s><|im_start|>user\\n{prompt}<|im_end|>\\n<|im_start|>assistant\\n{reply}<|im_end|>\`; the loss is on
the reply and its \`<|im_end|>\`. Near misses are plausible wrong replies (an answer off by one or
ten, two adjacent words swapped, a format's bracket changed or dropped), as real data holds mistakes.

- **Phase 1** (scripts/pretrain/corpus.ts): ${f.corpusSize} single-turn chats, the four tasks in equal
  shares, ${pct(config.wrongShare)} near misses.
- **Phase 2** (scripts/pretrain/corpus-continue.ts): ${f.corpus2Size} chats (${shares}),
  ${pct(continued.wrongShare)} near misses, so that sampling at temperature 1 lands in a partial skill
  while the likeliest reply stays right (GRPO's job is to close that gap); ${pct(continued.exemplarShare)}
  of the prompts carry 1 to ${continued.maxExemplars} worked examples of the same task, rendered exactly as
  a Training-Free run renders its exemplars (the exemplars template, \`[E3] Task: ...\\nAnswer: ...\`;
  for copy-format half of them include one with the same format), and their replies are near misses
  only ${pct(continued.exemplarWrongShare)} of the time, as curated few-shot prompts are cleaner data;
  count-letter problems whose answer is 1 are kept at ${pct(continued.countLetterOneShare)} of that task.

## Training

\`npm run pretrain\` (scripts/pretrain) runs both phases. Phase 1: corpus seed ${config.seed}, weights
initialised from seed ${spec.seed}; ${config.steps} AdamW updates of ${config.batch} chats (mean token negative
log-likelihood per reply), peak learning rate ${config.lr} after ${config.warmup} warmup updates, cosine to
${config.lrFloor} x peak, weight decay ${config.weightDecay}, gradient norm clipped at ${config.maxGradNorm}; ${speed(trained)}.
Phase 2 continues from those weights with a fresh AdamW state: corpus seed ${continued.seed}, ${continued.steps}
updates of ${continued.batch}, peak learning rate ${continued.lr} after ${continued.warmup} warmup updates, cosine to
${continued.lrFloor} x peak; ${speed(phase2)}.${f.training.continuedFrom === undefined ? '' : `
This model's phase 2 started from the phase-1 model the same command had written before, the
previous version of this folder in the repository's history (\`npm run pretrain -- --from DIR\`
skips phase 1 and continues from the model in DIR).`}
Full-parameter gradients from onnxruntime's training graphs (\`lib/train/full-engine.ts\`: the
forward and the backward into every weight as ONNX graphs, examples of similar length run together) on
${trained.workers} onnxruntime threads, AdamW in TypeScript, on a shared two-core machine.

onnxruntime's log-probs of the exported model equal the engine's to ${f.logprobDifference.toExponential(1)} (checked at export).

## Held-out accuracy

Exact match on held-out problems (the tasks' default split), ${CARD_EVAL.size} problems per task from dataset seed
${CARD_EVAL.seed}, measured through the ONNX policy (\`loadOnnxPolicy\`, \`generateGroup\`, Node CPU, at most
${MAX_REPLY_TOKENS} new tokens): greedy is one reply per problem at temperature 0; T=1 is ${CARD_EVAL.samples} replies per
problem at temperature 1 (sampler seed ${CARD_EVAL.samplerSeed} + problem index).

| task | greedy | T=1 |
|---|---|---|
${rows.join('\n')}
| mean | ${pct(meanAccuracy(f.greedy))} | ${pct(meanAccuracy(f.sampled))} |

count-letter draws its answers 1, 2 and 3 equally often (a reply of "1" to every problem scores
${pct(f.countLetterOnes)} on these held-out problems, about chance); this model's corpora were drawn when most
count-letter answers were 1, so its count-letter accuracy near that share says it guesses "1".
What GRPO does on this model (full-depth LoRA and the head adapter, held-out accuracy before and
after): BENCHMARKS.md, "skill" (\`npm run bench -- skill\`).

Sampled replies (T=1):

| task | prompt | reply | answer |
|---|---|---|---|
${examples.join('\n')}
`;
  await writeFile(join(dir, 'README.md'), text);
}
