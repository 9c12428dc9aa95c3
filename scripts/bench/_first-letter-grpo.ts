/**
 * GRPO on a prompt-dependent reward with either adapter, the same prompts, group size, steps and
 * seed, measured before and after on held-out words; shared by the learning benchmark and the
 * learning test (test/lora/learning.test.ts). It runs in Node on either bundled model (the same character tokenizer): `webgrpo-skill`, pretrained on
 * the skill tasks (prompts in its chat template, as it was trained), and `webgrpo-tiny`, random
 * weights (raw prompts). The task is `first-letter`
 * ("First letter of tiger:", reward = share of the reply's characters equal to the word's first
 * letter). Both adapters are the product's gradient method (`gradientGrpo`, the driver's loop) on
 * the same training prompts, in order, with the same group size, steps and seed:
 *
 * - full-depth LoRA (`adapter: 'lora'`, rank 8 on all seven projections of every layer, the CPU
 *   engine, no KL or entropy bonus): after every update the policy samples from the adapter merged
 *   into its weights;
 * - the head adapter (rank 8 on the LM head), whose policy samples adapted logits.
 *
 * Each is measured before and after on held-out words (_first-letter-task.ts).
 */
import { fileURLToPath } from 'node:url';
import { gradientGrpo } from '../../lib/grad.js';
import type { DatasetItem, RewardFunction } from '../../lib/index.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
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

const reward: RewardFunction = { name: 'first-letter', score: ({ text, item }) => score(text, item) };

/** The run's options besides its adapter: the training words in order, one epoch of `steps` steps. */
function runOptions(model: Model, seed: number, train: DatasetItem[]) {
  const dataset = train.map((item) => ({ ...inputOf(model, item), answer: item.answer }));
  return { dataset, rewards: [reward], groupSize: GROUP, batchSize: BATCH, epochs: 1, maxNewTokens: MAX_NEW, temperature: 1, seed, shuffle: false };
}

export interface Trained {
  before: Measure;
  after: Measure;
  seconds: number;
}

export async function trainLora(model: Model, seed: number, steps = STEPS): Promise<Trained> {
  const started = performance.now();
  const { train, heldOut } = datasets(seed, steps);
  const policy = await loadOnnxPolicy({ model: model.dir });
  try {
    const before = await measure(model, policy, heldOut, seed);
    const run = gradientGrpo({ adapter: 'lora', engine: 'cpu', policy, ...runOptions(model, seed, train), lora: { r: 8, alpha: 16 }, optimizer: { lr: LORA_LR }, loss: { beta: 0, entropyCoeff: 0 } });
    const { trainer } = await run.result();
    // The policy samples from the last merged adapter.
    const after = await measure(model, policy, heldOut, seed);
    trainer.dispose();
    return { before, after, seconds: (performance.now() - started) / 1000 };
  } finally {
    await policy.dispose();
  }
}

export async function trainHead(model: Model, seed: number, steps = STEPS): Promise<Trained> {
  const started = performance.now();
  const { train, heldOut } = datasets(seed, steps);
  const policy = await loadOnnxPolicy({ model: model.dir, hiddenState: true });
  try {
    const before = await measure(model, policy, heldOut, seed);
    const { trainer } = await gradientGrpo({ policy, ...runOptions(model, seed, train), optimizer: { lr: HEAD_LR } }).result();
    // The trainer stays attached: the policy samples the adapted logits.
    const after = await measure(model, policy, heldOut, seed);
    trainer.dispose();
    return { before, after, seconds: (performance.now() - started) / 1000 };
  } finally {
    await policy.dispose();
  }
}
