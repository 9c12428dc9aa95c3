/**
 * GRPO on a prompt-dependent reward with either adapter, the same prompts, group size, steps and
 * seed, measured before and after on held-out words; shared by the learning benchmark and the
 * learning test (test/lora/learning.test.ts). It runs in Node on either bundled model (the same character tokenizer): `webgrpo-skill`, pretrained on
 * the skill tasks (prompts in its chat template, as it was trained), and `webgrpo-tiny`, random
 * weights (raw prompts). The task is `first-letter`
 * ("First letter of tiger:", reward = share of the reply's characters equal to the word's first
 * letter). Both adapters get the same training prompts, group size, steps and seed:
 *
 * - full-depth LoRA (rank 8 on all seven projections of every layer, GrpoTrainer over the LoRA engine): each step
 *   samples its groups from the adapted model (the adapter merged into the ONNX file with
 *   mergeLoraIntoOnnx and loaded as a fresh policy), computes advantages, and updates;
 * - the head adapter (GrpoTrainer over the head adapter's engine, rank 8 on the LM head), whose policy samples adapted logits.
 *
 * Each is measured before and after on held-out words (_first-letter-task.ts).
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GrpoTrainer, groupRolloutBatch, headEngine, loraEngine } from '../../lib/grad.js';
import type { DatasetItem } from '../../lib/index.js';
import { GrpoConfig } from '../../lib/math.js';
import { createLoraAdapter } from '../../lib/lora/adapter.js';
import { mergeLoraIntoOnnx } from '../../lib/lora/onnx-merge.js';
import { readDecoderWeights } from '../../lib/weights/read-onnx.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import type { GroupResult } from '../../lib/core/policy.js';
import { BATCH, datasets, GROUP, inputOf as taskInput, MAX_NEW, measure as measureTask, score, type Measure } from './_first-letter-task.js';

export { BATCH, GROUP, MAX_NEW, type Measure };

const TINY_DIR = fileURLToPath(new URL('../../public/models/webgrpo-tiny', import.meta.url));
const SKILL_DIR = fileURLToPath(new URL('../../public/models/webgrpo-skill', import.meta.url));

export interface Model {
  name: string;
  dir: string;
  /** Prompts in the chat template (the skill model's training format) or raw. */
  chat: boolean;
}
export const MODELS: Model[] = [
  { name: 'webgrpo-skill', dir: SKILL_DIR, chat: true },
  { name: 'webgrpo-tiny (random)', dir: TINY_DIR, chat: false },
];
export const SEEDS = [1, 2, 3];
export const STEPS = 40;
export const LORA_LR = 2e-3;
export const HEAD_LR = 0.02;

const inputOf = (model: Model, item: DatasetItem) => taskInput(model.chat, item);
const measure = (model: Model, policy: OnnxPolicy, items: DatasetItem[], seed: number) => measureTask(policy, items, seed, model.chat);

async function sampleBatch(model: Model, policy: OnnxPolicy, items: DatasetItem[], step: number, seed: number): Promise<GroupResult[]> {
  const groups: GroupResult[] = [];
  for (const [i, item] of items.entries()) {
    groups.push(await policy.generateGroup({ ...inputOf(model, item), groupSize: GROUP, maxNewTokens: MAX_NEW, temperature: 1, seed: seed * 100_003 + step * 101 + i }));
  }
  return groups;
}

export interface Trained {
  before: Measure;
  after: Measure;
  seconds: number;
}

export async function trainLora(model: Model, seed: number, steps = STEPS): Promise<Trained> {
  const dirs: string[] = [];
  const started = performance.now();
  const { train, heldOut } = datasets(seed, steps);
  const bytes = new Uint8Array(await readFile(join(model.dir, 'onnx/model.onnx')));
  const config = JSON.parse(await readFile(join(model.dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const weights = await readDecoderWeights(bytes, { config });
  const adapter = createLoraAdapter(weights.shape, { r: 8, alpha: 16, seed });
  let policy = await loadOnnxPolicy({ model: model.dir });
  // The loss of grpoLoss's defaults (no KL, no entropy bonus); prompts encode as the current sampler's.
  const engine = loraEngine({ weights, adapter, promptIds: (input) => policy.promptIds(input) });
  const trainer = new GrpoTrainer(engine, { lr: LORA_LR }, new GrpoConfig({ numGenerations: GROUP, beta: 0, entropyCoeff: 0 }), { temperature: 1 });
  try {
    const before = await measure(model, policy, heldOut, seed);
    for (let step = 0; step < steps; step++) {
      const items = train.slice(step * BATCH, (step + 1) * BATCH);
      const groups = await sampleBatch(model, policy, items, step, seed);
      const batch = groupRolloutBatch(groups.map((g, i) => ({ completions: g.completions, rewards: g.completions.map((c) => score(c.text, items[i])) })));
      await trainer.trainStep(batch, items.map((item) => inputOf(model, item)));
      // Sampling follows the adapter: the next groups come from W + s A^T B^T.
      const dir = await mkdtemp(join(tmpdir(), 'webgrpo-learn-'));
      dirs.push(dir);
      await cp(model.dir, dir, { recursive: true });
      await writeFile(join(dir, 'onnx/model.onnx'), await mergeLoraIntoOnnx(bytes, weights, adapter));
      await policy.dispose();
      policy = await loadOnnxPolicy({ model: dir });
    }
    return { before, after: await measure(model, policy, heldOut, seed), seconds: (performance.now() - started) / 1000 };
  } finally {
    await policy.dispose();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  }
}

export async function trainHead(model: Model, seed: number, steps = STEPS): Promise<Trained> {
  const started = performance.now();
  const { train, heldOut } = datasets(seed, steps);
  const policy = await loadOnnxPolicy({ model: model.dir, hiddenState: true });
  const trainer = new GrpoTrainer(headEngine(policy, { adapter: { seed } }), { lr: HEAD_LR }, new GrpoConfig({ numGenerations: GROUP }), { temperature: 1 });
  try {
    const before = await measure(model, policy, heldOut, seed);
    for (let step = 0; step < steps; step++) {
      const items = train.slice(step * BATCH, (step + 1) * BATCH);
      const groups = await sampleBatch(model, policy, items, step, seed);
      const batch = groupRolloutBatch(groups.map((g, i) => ({ completions: g.completions, rewards: g.completions.map((c) => score(c.text, items[i])) })));
      await trainer.trainStep(batch, items.map((item) => inputOf(model, item)));
    }
    return { before, after: await measure(model, policy, heldOut, seed), seconds: (performance.now() - started) / 1000 };
  } finally {
    trainer.dispose();
    await policy.dispose();
  }
}
