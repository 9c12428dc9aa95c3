/**
 * Resumable pretraining (scripts/pretrain/train.ts with a checkpoint): a run stopped between two
 * checkpoints and started again from its original weights, as a new process would, goes on from
 * the last checkpoint and ends with the unbroken run's weights, bit for bit; a checkpoint of
 * another run is refused with a typed error. A tiny decoder and the sorter corpus.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AbortError, InvalidInputError } from '../../lib/errors.js';
import { decoderParameters } from '../../lib/train/graph/lora-graph.js';
import { vocabulary } from '../../scripts/build-model/tokenizer.js';
import { readCheckpoint } from '../../scripts/pretrain/checkpoint.js';
import { SORTER, type SorterConfig } from '../../scripts/pretrain/config.js';
import { buildSorterCorpus } from '../../scripts/pretrain/corpus-sorter.js';
import { pretrain, type TrainLog } from '../../scripts/pretrain/train.js';
import { randomDecoder } from '../lora/random-decoder.js';

const config: SorterConfig = { ...SORTER, steps: 7, batch: 3, warmup: 2, lr: 5e-3 };
const corpus = buildSorterCorpus(config);
const fresh = () =>
  randomDecoder({ shape: { vocabSize: vocabulary(0).length, hiddenSize: 16, intermediateSize: 24, numLayers: 1, numHeads: 2, numKvHeads: 1, headDim: 8, ropeTheta: 10000, rmsNormEps: 1e-5 }, tied: true, seed: 11 });
const tensors = (w: ReturnType<typeof fresh>) => decoderParameters(w).map((p) => p.tensor);
const dirs: string[] = [];
const tempFile = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'webgrpo-ckpt-'));
  dirs.push(dir);
  return join(dir, 'checkpoint.bin');
};
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('resumable pretraining', () => {
  it('resumes a stopped run from its last checkpoint and ends with the unbroken run’s weights, bit for bit', async () => {
    const unbroken = fresh();
    const whole = await pretrain(unbroken, corpus, config, () => undefined);
    expect(whole.resumedFrom).toBeUndefined();

    const file = await tempFile();
    const checkpoint = { file, every: 2, key: 'run-a' };
    // Stopped after update 5, between the checkpoints of updates 4 and 6.
    const stop = new AbortController();
    const stopAt5 = (l: TrainLog) => l.step === 5 && stop.abort();
    const first = fresh();
    await expect(pretrain(first, corpus, config, stopAt5, { checkpoint, logEvery: 1, signal: stop.signal })).rejects.toBeInstanceOf(AbortError);
    const saved = (await readCheckpoint(file))!;
    expect(saved.step).toBe(4);
    expect(saved.state.updates).toBe(4);
    // A half-written next checkpoint, as a stop during its write leaves it, is not read.
    await writeFile(`${file}.tmp`, 'partial');

    const resumed = fresh();
    const again = await pretrain(resumed, corpus, config, () => undefined, { checkpoint, logEvery: 1 });
    expect(again.resumedFrom).toBe(4);
    expect(again.rows).toBe(whole.rows);
    const [want, got] = [tensors(unbroken), tensors(resumed)];
    expect(got.length).toBe(want.length);
    got.forEach((t, k) => expect(Buffer.from(t.buffer, t.byteOffset, t.byteLength).equals(Buffer.from(want[k].buffer, want[k].byteOffset, want[k].byteLength))).toBe(true));
    // The broken run did move the weights off their start: the comparison above is not trivially equal.
    expect(tensors(fresh())[0]).not.toEqual(want[0]);
    expect((await readCheckpoint(file))!.step).toBe(config.steps);
  });

  it('refuses a checkpoint of another run', async () => {
    const file = await tempFile();
    await pretrain(fresh(), corpus, { ...config, steps: 2 }, () => undefined, { checkpoint: { file, every: 2, key: 'run-a' } });
    const error = await pretrain(fresh(), corpus, config, () => undefined, { checkpoint: { file, every: 2, key: 'run-b' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).code).toBe('InvalidInput');
    await writeFile(file, 'not a checkpoint');
    await expect(readCheckpoint(file)).rejects.toBeInstanceOf(InvalidInputError);
  });
});
