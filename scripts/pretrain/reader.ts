/**
 * `npm run pretrain -- --reader`: the reader model, public/models/webgrpo-reader. The bundled
 * `webgrpo-skill` (unchanged) continued on the reading corpus (corpus-exemplars.ts: worked
 * examples under random per-chat code-to-format mappings, in the exemplars template), then
 * exported, checked against the engine and measured for its card (reader-card.ts).
 *
 * Options (with --reader): --out DIR (default public/models/webgrpo-reader), --card (no training:
 * measure the folder's model again and rewrite its card; training facts come from its training.json).
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decoderParameterCount } from '../../lib/train/graph/lora-graph.js';
import { readDecoderWeights } from '../../lib/weights/read-onnx.js';
import type { DecoderWeights } from '../../lib/weights/decoder.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { namedFormat } from '../../lib/tasks/named-format.js';
import { skillTasks } from '../../lib/tasks/skill.js';
import { buildModel } from '../build-model/index.js';
import { skillAccuracy } from './accuracy.js';
import { CARD_EVAL } from './card.js';
import { SKILL_SPEC } from './config.js';
import { buildExemplarCorpus, EXEMPLAR_CONTINUE } from './corpus-exemplars.js';
import { libraryGain } from './library-gain.js';
import { CARD_GAIN, writeReaderCard, type ReaderFacts, type ReaderTraining } from './reader-card.js';
import { exportedLogprobDifference, pretrain } from './train.js';
import { toBuilder } from './weights.js';

const readModel = async (dir: string) =>
  readDecoderWeights(new Uint8Array(await readFile(join(dir, 'onnx/model.onnx'))), { config: JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) });

export async function buildReader(root: string, options: { out?: string; card?: boolean }): Promise<void> {
  const from = 'public/models/webgrpo-skill';
  const dir = options.out ?? join(root, 'public/models/webgrpo-reader');
  const factsFile = join(dir, 'training.json');
  let weights: DecoderWeights;
  let training: ReaderTraining;
  if (options.card) {
    weights = await readModel(dir);
    training = JSON.parse(await readFile(factsFile, 'utf8')) as ReaderTraining;
  } else {
    weights = await readModel(join(root, from));
    const corpus = await buildExemplarCorpus(EXEMPLAR_CONTINUE);
    const parts: Record<string, number> = {};
    for (const e of corpus) parts[e.task] = (parts[e.task] ?? 0) + 1;
    console.log(`reader: ${corpus.length} examples (${JSON.stringify(parts)}); ${EXEMPLAR_CONTINUE.steps} updates of ${EXEMPLAR_CONTINUE.batch}`);
    const trained = await pretrain(weights, corpus, EXEMPLAR_CONTINUE, (l) => console.log(`step ${l.step}  loss ${l.loss.toFixed(4)}  ${(l.rows / l.seconds).toFixed(0)} rows/s  ${l.seconds.toFixed(0)} s`));
    training = { from, config: EXEMPLAR_CONTINUE, trained, parts };
    await buildModel(SKILL_SPEC, dir, toBuilder(weights));
    await writeFile(factsFile, `${JSON.stringify(training, null, 2)}\n`);
  }
  const policy = await loadOnnxPolicy({ model: dir, device: 'cpu' });
  try {
    const logprobDifference = await exportedLogprobDifference(policy, weights, namedFormat.dataset({ size: 1, seed: 1 })[0]);

    const tasks = [...skillTasks, namedFormat];
    const greedy = await skillAccuracy(policy, tasks, { ...CARD_EVAL, temperature: 0, samples: 1 });
    const sampled = await skillAccuracy(policy, tasks, { ...CARD_EVAL, temperature: 1 });
    const exemplars = await libraryGain(policy, { mode: 'exemplars', ...CARD_GAIN });
    const lessons = await libraryGain(policy, { mode: 'lessons', ...CARD_GAIN });
    const bytes = (await stat(join(dir, 'onnx/model.onnx'))).size;
    const facts: ReaderFacts = { spec: SKILL_SPEC, parameters: decoderParameterCount(weights), training, logprobDifference, greedy, sampled, exemplars, lessons, bytes };
    await writeReaderCard(dir, facts);
    console.log(`wrote ${dir}`);
  } finally {
    await policy.dispose();
  }
}
