/**
 * `npm run pretrain`: pretrains the skill model and writes public/models/webgrpo-skill/ with its
 * model card.
 *
 *   phase 1: seeded corpus (corpus.ts) -> supervised full-parameter training (train.ts) on onnxruntime's training graphs
 *   phase 2: continued on the second corpus (corpus-continue.ts: more near misses, worked examples, count-letter rebalanced)
 *   -> the model builder's ONNX graph with the trained weights (scripts/build-model)
 *   -> checks: the tokenizer's chat prompt equals the corpus', onnxruntime's log-probs equal the engine's
 *   -> held-out accuracy per task through the ONNX policy, greedy and at temperature 1 -> README.md
 *
 * Options: --workers N (default PRETRAIN.workers), --steps N (fewer phase-1 updates, for a trial run), --out DIR,
 * --from DIR (skip phase 1: continue from the phase-1 model in DIR), --card (no training: measure the
 * folder's model again and rewrite its card; training facts come from its training.json),
 * --reader (instead: the reader model, public/models/webgrpo-reader, from webgrpo-skill; reader.ts),
 * --sorter (instead: the first run's model, public/models/webgrpo-sorter, from webgrpo-skill, resumable;
 * sorter.ts; with --set k=v,... for a trial's config).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { decoderParameterCount } from '../../lib/train/graph/lora-graph.js';
import { readDecoderWeights } from '../../lib/weights/read-onnx.js';
import type { DecoderWeights } from '../../lib/weights/decoder.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { countLetter, skillTasks } from '../../lib/tasks/skill.js';
import { buildModel } from '../build-model/index.js';
import { vocabulary } from '../build-model/tokenizer.js';
import { initWeights } from '../build-model/weights.js';
import { skillAccuracy } from './accuracy.js';
import { writeCard, CARD_EVAL, type CardFacts, type PhaseFacts } from './card.js';
import { CONTINUE, PRETRAIN, SKILL_SPEC } from './config.js';
import { buildContinuationCorpus } from './corpus-continue.js';
import { buildCorpus, chatPromptIds } from './corpus.js';
import { buildReader } from './reader.js';
import { buildSorter } from './sorter.js';
import { pretrain, pretrainEngine, type TrainLog, type TrainResult } from './train.js';
import { toBuilder, toDecoder } from './weights.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const { values } = parseArgs({ options: { steps: { type: 'string' }, out: { type: 'string' }, card: { type: 'boolean' }, workers: { type: 'string' }, from: { type: 'string' }, reader: { type: 'boolean' }, sorter: { type: 'boolean' }, set: { type: 'string' } } });
if (values.reader) {
  await buildReader(root, { out: values.out, card: values.card });
  process.exit(0);
}
if (values.sorter) {
  await buildSorter(root, { out: values.out, card: values.card, set: values.set });
  process.exit(0);
}
const workers = values.workers ? { workers: Number(values.workers) } : {};
const config = { ...PRETRAIN, ...(values.steps ? { steps: Number(values.steps) } : {}), ...workers };
const continued = { ...CONTINUE, ...workers };
const dir = values.out ?? join(root, 'public/models/webgrpo-skill');
const factsFile = join(dir, 'training.json');

const vocabSize = vocabulary(SKILL_SPEC.reservedTokens).length;
const corpus = buildCorpus(config.steps * config.batch, config.seed, config.wrongShare);
const corpus2 = buildContinuationCorpus(continued);
const readModel = async (from: string) =>
  readDecoderWeights(new Uint8Array(await readFile(join(from, 'onnx/model.onnx'))), { config: JSON.parse(await readFile(join(from, 'config.json'), 'utf8')) });
const log = (line: TrainLog) =>
  console.log(`step ${line.step}  loss ${line.loss.toFixed(4)}  lr ${line.lr.toExponential(2)}  |g| ${line.gradNorm.toFixed(3)}  ${(line.rows / line.seconds).toFixed(0)} rows/s  ${line.seconds.toFixed(0)} s`);
let weights: DecoderWeights;
let trained: PhaseFacts;
if (values.card) {
  // --card: measure the committed model again and rewrite its card; no training.
  weights = await readModel(dir);
  trained = JSON.parse(await readFile(factsFile, 'utf8')) as PhaseFacts;
} else {
  let phase1: TrainResult | { from: string; trained: TrainResult };
  if (values.from) {
    // The phase-1 facts travel with the phase-1 model (its training.json), so the card can still state them.
    const from = values.from;
    weights = await readModel(from);
    phase1 = { from, trained: (JSON.parse(await readFile(join(from, 'training.json'), 'utf8')) as { trained: TrainResult }).trained };
  } else {
    weights = toDecoder(SKILL_SPEC, initWeights(SKILL_SPEC, vocabSize));
    console.log(`phase 1: ${decoderParameterCount(weights)} parameters; ${corpus.length} examples; ${config.steps} updates of ${config.batch}`);
    phase1 = await pretrain(weights, corpus, config, log);
  }
  console.log(`phase 2: ${corpus2.length} examples; ${continued.steps} updates of ${continued.batch}`);
  const phase2 = await pretrain(weights, corpus2, continued, log);
  console.log(`phase 2 trained in ${phase2.seconds.toFixed(0)} s on ${phase2.workers} workers, ${(phase2.rows / phase2.seconds).toFixed(0)} rows/s`);
  await buildModel(SKILL_SPEC, dir, toBuilder(weights));
  // What only the training run can measure, kept for --card.
  trained = { config, trained: 'trained' in phase1 ? phase1.trained : phase1, ...('from' in phase1 ? { continuedFrom: phase1.from } : {}), continued, phase2 };
  await writeFile(factsFile, `${JSON.stringify(trained, null, 2)}\n`);
}
const parameters = decoderParameterCount(weights);
const policy = await loadOnnxPolicy({ model: dir, device: 'cpu' });

// The ONNX model must be the engine's model: same prompt tokens, same log-probs.
const engine = await pretrainEngine(weights, 1);
let worst = 0;
for (const task of skillTasks) {
  for (const item of task.dataset({ size: 3, seed: 1 })) {
    const content = item.messages![0].content as string;
    const reply = corpus.find((e) => e.task === task.name)!.replyIds;
    const scored = await policy.scoreCompletions({ messages: item.messages, completions: [reply] });
    const group = await policy.generateGroup({ messages: item.messages, groupSize: 1, maxNewTokens: 1, temperature: 0 });
    const expected = chatPromptIds(content);
    if (group.promptTokenIds.join() !== expected.join()) throw new Error(`the tokenizer's chat prompt differs from the corpus' for ${JSON.stringify(content)}`);
    const graph = (await engine.forward([{ prompt: expected, completions: [reply] }], { temperature: 1, reference: false })).logps;
    graph.forEach((lp, k) => (worst = Math.max(worst, Math.abs(lp - scored.logprobs[0][k]))));
  }
}
engine.dispose();
console.log(`onnxruntime vs engine log-probs: max |difference| ${worst.toExponential(2)}`);
if (!(worst <= 1e-4)) throw new Error(`onnxruntime's log-probs differ from the engine's by ${worst}`);

const greedy = await skillAccuracy(policy, skillTasks, { ...CARD_EVAL, temperature: 0, samples: 1 });
const sampled = await skillAccuracy(policy, skillTasks, { ...CARD_EVAL, temperature: 1 });
for (const [i, g] of greedy.entries()) console.log(`${g.task}: greedy ${(100 * g.exact).toFixed(1)}%  T=1 ${(100 * sampled[i].exact).toFixed(1)}%`);

const counts = countLetter.dataset({ size: CARD_EVAL.size, seed: CARD_EVAL.seed });
const countLetterOnes = counts.filter((item) => item.answer === '1').length / counts.length;
const facts: CardFacts = { spec: SKILL_SPEC, parameters, vocabSize, training: trained, logprobDifference: worst, greedy, sampled, corpusSize: corpus.length, corpus2Size: corpus2.length, countLetterOnes };
await writeCard(dir, facts);
console.log(`wrote ${dir}`);
