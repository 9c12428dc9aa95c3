/**
 * `npm run pretrain -- --sorter`: the sorter model, public/models/webgrpo-sorter, the playground's
 * first-run model. The bundled `webgrpo-skill` (unchanged) continued on the sorter corpus
 * (corpus-sorter.ts: sort-words' training split, replies right or near misses in set shares), in
 * chunks: a checkpoint (checkpoint.ts) is written every SORTER_CHECKPOINT_EVERY updates in the output
 * folder, and the same command run again after a stop goes on from it and ends with the weights
 * an unbroken run gives. Then exported, checked against the engine, and measured for its card.
 *
 * Options (with --sorter): --out DIR (default public/models/webgrpo-sorter), --card (no training:
 * measure the folder's model again and rewrite its card), --set k=v,... (override SORTER's
 * numbers for a trial; the run's training.json records the config it used).
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decoderParameterCount } from '../../lib/train/graph/lora-graph.js';
import { readDecoderWeights } from '../../lib/weights/read-onnx.js';
import type { DecoderWeights } from '../../lib/weights/decoder.js';
import { InvalidInputError } from '../../lib/errors.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { skillTasks, sortWords } from '../../lib/tasks/skill.js';
import { buildModel } from '../build-model/index.js';
import { skillAccuracy } from './accuracy.js';
import { CARD_EVAL } from './card.js';
import { removeCheckpoint } from './checkpoint.js';
import { SKILL_SPEC, SORTER, SORTER_CHECKPOINT_EVERY, type SorterConfig } from './config.js';
import { buildSorterCorpus } from './corpus-sorter.js';
import { sorterProfile } from './sorter-profile.js';
import { SORTER_PROFILE, writeSorterCard, type SorterFacts, type SorterTraining } from './sorter-card.js';
import { exportedLogprobDifference, pretrain } from './train.js';
import { toBuilder } from './weights.js';

const readModel = async (dir: string) =>
  readDecoderWeights(new Uint8Array(await readFile(join(dir, 'onnx/model.onnx'))), { config: JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) });

/** SORTER with `k=v,...` overrides of its numbers. */
export function sorterConfig(set: string | undefined): SorterConfig {
  const config: Record<string, number> = { ...SORTER };
  for (const pair of set ? set.split(',') : []) {
    const [k, v] = pair.split('=');
    if (!(k in config) || !Number.isFinite(Number(v))) throw new InvalidInputError('set', `${JSON.stringify(pair)}: expected key=number with a key of SORTER (${Object.keys(SORTER).join(', ')}).`);
    config[k] = Number(v);
  }
  return config as unknown as SorterConfig;
}

export async function buildSorter(root: string, options: { out?: string; card?: boolean; set?: string }): Promise<void> {
  const from = 'public/models/webgrpo-skill';
  const dir = options.out ?? join(root, 'public/models/webgrpo-sorter');
  const factsFile = join(dir, 'training.json');
  let weights: DecoderWeights;
  let training: SorterTraining;
  if (options.card) {
    weights = await readModel(dir);
    training = JSON.parse(await readFile(factsFile, 'utf8')) as SorterTraining;
  } else {
    const config = sorterConfig(options.set);
    const fromBytes = await readFile(join(root, from, 'onnx/model.onnx'));
    weights = await readModel(join(root, from));
    const corpus = buildSorterCorpus(config);
    const sorts = corpus.filter((e) => e.task === sortWords.name);
    const right = sorts.filter((e) => e.correct).length / sorts.length;
    console.log(`sorter: ${corpus.length} examples, ${sorts.length} of them sort-words, ${(100 * right).toFixed(1)}% of those right; ${config.steps} updates of ${config.batch}`);
    // The run is its config and its starting weights: a checkpoint of any other run is refused.
    const key = JSON.stringify({ from: createHash('sha256').update(fromBytes).digest('hex'), config });
    const file = join(dir, 'checkpoint.bin');
    await mkdir(dir, { recursive: true });
    const trained = await pretrain(weights, corpus, config, (l) => console.log(`step ${l.step}  loss ${l.loss.toFixed(4)}  lr ${l.lr.toExponential(2)}  ${(l.rows / l.seconds).toFixed(0)} rows/s  ${l.seconds.toFixed(0)} s`), { checkpoint: { file, every: SORTER_CHECKPOINT_EVERY, key } });
    if (trained.resumedFrom !== undefined) console.log(`resumed from the checkpoint after update ${trained.resumedFrom}`);
    training = { from, config, trained, corpusRight: right };
    await buildModel(SKILL_SPEC, dir, toBuilder(weights));
    await writeFile(factsFile, `${JSON.stringify(training, null, 2)}\n`);
    await removeCheckpoint(file);
  }
  const policy = await loadOnnxPolicy({ model: dir, device: 'cpu' });
  try {
    const logprobDifference = await exportedLogprobDifference(policy, weights, sortWords.dataset({ size: 1, seed: 1 })[0]);

    const profile = await sorterProfile(policy, SORTER_PROFILE);
    const pct = (x: number) => (100 * x).toFixed(1);
    console.log(`sort-words held-out: greedy ${pct(profile.greedy)}%  T=1 ${pct(profile.sampled)}%  pass@${profile.k} ${pct(profile.passAtK)}%  greedy kinds ${JSON.stringify(Object.fromEntries(Object.entries(profile.kinds).map(([k, v]) => [k, pct(v)])))}  distinct ${profile.distinctGreedy}/${profile.problems}`);
    const greedy = await skillAccuracy(policy, skillTasks, { ...CARD_EVAL, temperature: 0, samples: 1 });
    const sampled = await skillAccuracy(policy, skillTasks, { ...CARD_EVAL, temperature: 1 });
    const bytes = (await stat(join(dir, 'onnx/model.onnx'))).size;
    const facts: SorterFacts = { spec: SKILL_SPEC, parameters: decoderParameterCount(weights), training, logprobDifference, profile, greedy, sampled, bytes };
    await writeSorterCard(dir, facts);
    console.log(`wrote ${dir}`);
  } finally {
    await policy.dispose();
  }
}
