/**
 * Every method side by side on one task, one model and one budget: Training-Free GRPO (exemplars,
 * lessons with the model as its own critic), the head adapter, full-depth LoRA (both with DAPO's
 * dynamic sampling) and the router, each started through the method registry (`startRun(methodOf(kind), options)`,
 * as the playground and the CLI start them) on the same training problems, group size, steps and
 * seed. Held-out accuracy before and after, greedy and at T=1, is the run's own held-out
 * evaluation (the driver's, before the first step and after the last, through the method's hooks:
 * the library in the prompt, the adapted policy, the routed arm), with `alsoGreedy` for the greedy pass.
 *
 * Two tasks on the bundled webgrpo-skill: named-format (the prompt names a format by a code number
 * and never shows it, so what a method can add lives in what it learns from the rewarded answers;
 * not in the model's corpus) and count-letter (in the corpus, greedy accuracy under half, answers
 * 1, 2, 3 equally often). Then named-format again on webgrpo-reader, the model taught to read
 * worked examples, its training-free runs showing each prompt the experience closest to it.
 */
import { fileURLToPath } from 'node:url';
import type { DatasetItem, EvaluationRecord, ExperienceLibrary, RouterArm } from '../../lib/index.js';
import { methodOf, startRun } from '../../lib/method.js';
import { countLetter, namedFormat, type SkillTask } from '../../lib/tasks.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { MAX_REPLY_TOKENS } from '../pretrain/accuracy.js';
import { READER_RUN } from '../pretrain/library-gain.js';
import { SKILL_DIR } from './_skill-grpo.js';

const READER_DIR = fileURLToPath(new URL('../../public/models/webgrpo-reader', import.meta.url));

interface Section {
  task: SkillTask;
  model: string;
  dir: string;
  /** Training-free options beyond the common ones (the library's retrieval on the reader). */
  library?: { retrieveExperiences: number; maxExemplars: number };
}

const SECTIONS: readonly Section[] = [
  { task: namedFormat, model: 'webgrpo-skill', dir: SKILL_DIR },
  { task: countLetter, model: 'webgrpo-skill', dir: SKILL_DIR },
  { task: namedFormat, model: 'webgrpo-reader', dir: READER_DIR, library: { retrieveExperiences: READER_RUN.retrieveExperiences, maxExemplars: READER_RUN.maxExemplars } },
];
/** The seed of the training problems, every sampling call, the adapters and the router. */
const SEED = 4;
/** Training: problems of the task's training split, replies per problem, problems per step, passes. */
const TRAIN = { size: 32, groupSize: 8, batchSize: 4, epochs: 1 };
/** Held-out problems per task (dataset seed), replies per problem at T=1, the evaluation's sampler seed. */
const EVAL = { size: 48, seed: 2027, samples: 4, samplerSeed: 11 };
const CRITIC_MAX_NEW_TOKENS = 96;
const ARMS: RouterArm[] = [
  { id: 'plain', label: 'As asked' },
  { id: 'cool', label: 'Cool', temperatureScale: 0.5 },
  { id: 'hot', label: 'Hot', temperatureScale: 1.5 },
];

type MethodName = 'exemplars' | 'lessons' | 'head adapter' | 'lora' | 'router';

const pct = (x: number | null | undefined) => (x === null || x === undefined ? '—' : (100 * x).toFixed(1));
const cell = (text: string) => JSON.stringify(text).replaceAll('|', '\\|').replaceAll('`', '\\`');

interface Measured {
  name: MethodName;
  /** The run's held-out evaluations before the first step and after the last. */
  evaluations: [EvaluationRecord, EvaluationRecord];
  seconds: number;
  notes: string[];
}

/** The kind and start options of each method, all on the same problems, groups, steps and seed. */
function startOptions({ task, library }: Section, name: MethodName, policy: OnnxPolicy, dataset: DatasetItem[], heldOut: DatasetItem[]) {
  const common = {
    policy,
    dataset,
    rewards: task.rewards,
    task: task.name,
    groupSize: TRAIN.groupSize,
    batchSize: TRAIN.batchSize,
    epochs: TRAIN.epochs,
    temperature: 1,
    maxNewTokens: MAX_REPLY_TOKENS,
    seed: SEED,
    evaluation: { dataset: heldOut, temperature: 1, samples: EVAL.samples, alsoGreedy: true, seed: EVAL.samplerSeed, correct: { reward: 'exact' } },
  };
  switch (name) {
    case 'exemplars':
    case 'lessons':
      return { kind: 'training-free', options: { ...common, mode: name, criticMaxNewTokens: CRITIC_MAX_NEW_TOKENS, ...library } };
    case 'head adapter':
      return { kind: 'gradient', options: { ...common, optimizer: { lr: 0.01 }, dynamicSampling: true } };
    case 'lora':
      return { kind: 'lora', options: { ...common, dynamicSampling: true } };
    case 'router':
      return { kind: 'router', options: { ...common, arms: ARMS } };
  }
}

async function measure(at: Section, name: MethodName, dataset: DatasetItem[], heldOut: DatasetItem[]): Promise<Measured> {
  const policy = await loadOnnxPolicy({ model: at.dir, hiddenState: name === 'head adapter' });
  const { kind, options } = startOptions(at, name, policy, dataset, heldOut);
  const started = performance.now();
  const notes: string[] = [];
  try {
    const run = startRun(methodOf(kind)!, options);
    const evaluations: EvaluationRecord[] = [];
    const stats = { resampledGroups: 0, resamples: 0, droppedGroups: 0, flat: 0, groups: 0, critiques: 0, parsed: 0 };
    for await (const event of run as AsyncIterable<{ type: string } & Record<string, unknown>>) {
      if (event.type === 'eval') evaluations.push(event.evaluation as EvaluationRecord);
      if (event.type === 'step-end') {
        const s = event.stats as { groups: number; zeroSpreadGroups: number; resampledGroups?: number; resamples?: number; droppedGroups?: number };
        stats.groups += s.groups;
        stats.flat += s.zeroSpreadGroups;
        stats.resampledGroups += s.resampledGroups ?? 0;
        stats.resamples += s.resamples ?? 0;
        stats.droppedGroups += s.droppedGroups ?? 0;
      }
      if (event.type === 'critique' || event.type === 'group-update') {
        stats.critiques += 1;
        if ((event.exchange as { parsed?: unknown }).parsed !== undefined) stats.parsed += 1;
      }
    }
    const seconds = (performance.now() - started) / 1000;
    const result = (await run.result()) as Record<string, unknown>;
    if (name === 'exemplars' || name === 'lessons') {
      const library = result.library as ExperienceLibrary;
      notes.push(`${library.exemplars.length} exemplars, ${library.entries.length} lessons${library.entries.length ? ` (${library.entries.slice(0, 2).map((e) => cell(e.text.slice(0, 60))).join(', ')})` : ''}${library.exemplars.length ? `; first exemplars ${library.exemplars.slice(0, 2).map((e) => `${cell(e.item)} -> ${cell(e.output)}`).join(', ')}` : ''}`);
      if (name === 'lessons') notes.push(`critic exchanges (critiques and group updates) ${stats.critiques}, parsed ${stats.parsed}`);
    } else if (name === 'router') {
      notes.push(`router probabilities at the end ${JSON.stringify(result.probabilities, (_k, v: unknown) => (typeof v === 'number' ? Number(v.toFixed(3)) : v))}`);
    } else {
      (result.trainer as { dispose(): void }).dispose();
      notes.push(`dynamic sampling: ${stats.resampledGroups} of ${stats.groups} groups resampled (${stats.resamples} extra samplings), ${stats.droppedGroups} left out of the update`);
    }
    if (name !== 'head adapter' && name !== 'lora') notes.push(`${stats.flat} of ${stats.groups} training groups had no reward spread`);
    return { name, evaluations: [evaluations[0], evaluations.at(-1)!], seconds, notes };
  } finally {
    await policy.dispose();
  }
}

const signed = (x: number) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;

/** One task's table on one model, its constant reply's score and what the model writes. */
async function section(at: Section): Promise<string[]> {
  const { task } = at;
  const dataset = task.dataset({ size: TRAIN.size, seed: SEED, split: 'train' });
  const heldOut = task.dataset({ size: EVAL.size, seed: EVAL.seed });
  const answers = heldOut.map((item) => item.answer as string);
  const constant = Math.max(...answers.map((a) => answers.filter((b) => b === a).length)) / answers.length;
  const measured: Measured[] = [];
  for (const name of ['exemplars', 'lessons', 'head adapter', 'lora', 'router'] as const) {
    console.log(`  ${at.model} ${task.name}: ${name}…`);
    measured.push(await measure(at, name, dataset, heldOut));
  }
  const rows = measured.map(({ name, evaluations: [before, after], seconds }) => {
    const [g0, g1] = [before.greedyPass!.summary.accuracy ?? 0, after.greedyPass!.summary.accuracy ?? 0];
    const [s0, s1] = [before.summary.accuracy ?? 0, after.summary.accuracy ?? 0];
    return `| ${name} | ${pct(g0)} | ${pct(g1)} | ${signed(g1 - g0)} | ${pct(s0)} | ${pct(s1)} | ${signed(s1 - s0)} | ${seconds.toFixed(0)} |`;
  });
  const shown = heldOut.slice(0, 3);
  const replies = (record: { items: Array<{ samples: Array<{ text: string }> }> }) => shown.map((_, i) => cell(record.items[i]?.samples[0]?.text ?? '')).join(', ');
  return [
    `### ${task.name}${at.model === 'webgrpo-skill' ? '' : ` on ${at.model}`}`,
    '',
    at.model === 'webgrpo-skill'
      ? `${task.description} ${task.heldOut}`
      : `The same problems, held-out set and budget on \`${at.model}\` (public/models/${at.model}, webgrpo-skill taught to read worked examples; BENCHMARKS "exemplars" has more seeds), exemplars and lessons each prompt shown only the experience closest to it (\`retrieveExperiences: ${at.library?.retrieveExperiences}\`, at most ${at.library?.maxExemplars} exemplars kept), as the playground runs them on this model.`,
    '',
    '| method | greedy before % | greedy after % | Δ | T=1 before % | T=1 after % | Δ | wall s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `A constant reply scores at most ${pct(constant)}% on these held-out problems (the most common answer's share); ${new Set(answers).size} distinct answers among ${answers.length} problems.`,
    '',
    `What the model writes (greedy, held-out ${shown.map((i) => cell(i.messages![0].content as string)).join(', ')}; answers ${shown.map((i) => cell(i.answer as string)).join(', ')}):`,
    '',
    `- base: ${replies(measured[0].evaluations[0].greedyPass!)}`,
    ...measured.flatMap((m) => [`- ${m.name}: ${replies(m.evaluations[1].greedyPass!)}`, ...m.notes.map((n) => `  - ${n}`)]),
    '',
  ];
}

export async function run(): Promise<string> {
  const sections: string[] = [];
  for (const at of SECTIONS) sections.push(...(await section(at)));
  const steps = Math.ceil(TRAIN.size / TRAIN.batchSize) * TRAIN.epochs;
  return [
    '## methods: every method on one task, one model, one budget',
    '',
    `Bundled \`webgrpo-skill\` (then \`webgrpo-reader\` on named-format), Node CPU. Per task, each method started through the registry (\`startRun(methodOf(kind), options)\`) on the same ${TRAIN.size} training-split problems (seed ${SEED}), groups of ${TRAIN.groupSize} replies at T=1, ${TRAIN.batchSize} problems per step, ${TRAIN.epochs} epoch (${steps} steps), at most ${MAX_REPLY_TOKENS} new tokens, seed ${SEED}: exemplars and lessons (the model is its own critic, at most ${CRITIC_MAX_NEW_TOKENS} new tokens per critic call), the head adapter (rank 8, lr 0.01) and full-depth LoRA (rank 8, lr 2e-3), both with DAPO's dynamic sampling (\`dynamicSampling: true\`: a flat group sampled again up to 3 times, then left out), and the router over ${ARMS.map((a) => `${a.id}${a.temperatureScale ? ` (T x ${a.temperatureScale})` : ''}`).join(', ')}. Held-out: ${EVAL.size} held-out problems per task (dataset seed ${EVAL.seed}), exact match, the run's own evaluation before its first step and after its last (\`evaluation: { temperature: 1, samples: ${EVAL.samples}, alsoGreedy: true, seed: ${EVAL.samplerSeed} }\`: ${EVAL.samples} replies per problem at T=1 and one greedy, the same draws before and after). Wall time: the run with its two evaluations.`,
    '',
    ...sections,
  ].join('\n');
}
