/**
 * Training-Free GRPO on the pretrained skill model, on the held-out protocol: for each skill task,
 * a Training-Free run on problems of the task's training split builds a library (exemplars mode:
 * the best reply of each group with reward spread becomes a worked example; lessons mode: the
 * model itself is the critic), and `evaluate()` measures the same held-out problems with the same
 * sampler seeds before (no library) and after (the library rendered into every prompt, as the run
 * does), greedy and at temperature 1. The model's second pretraining phase put prompts of this very
 * form in its corpus (a fifth of its chats carry 1 to 6 worked examples of the same task in the
 * exemplars template, their replies right more often than the rest), never with held-out problems;
 * whether it learnt to use them on held-out problems is what the exemplars rows measure, and the
 * notes show what it writes.
 */
import { evaluate, trainingFreeGrpo, type DatasetItem, type Evaluation, type ExperienceLibrary, type LoopMode } from '../../lib/index.js';
import { skillTasks, type SkillTask } from '../../lib/tasks.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { MAX_REPLY_TOKENS } from '../pretrain/accuracy.js';
import { SKILL_DIR } from './_skill-grpo.js';

/** Held-out problems per task, their seed, replies per problem at T=1 and the sampler's seed. */
const EVAL = { size: 25, seed: 2000, samples: 4, samplerSeed: 7 };
/** Each Training-Free run: training-split problems, group size, epochs, items per step. */
const TRAIN = { size: 12, seed: 1, groupSize: 5, epochs: 1, batchSize: 4, temperature: 1 };
/** The lessons critic is the skill model; its replies are cut short (it cannot write JSON lessons). */
const CRITIC_MAX_NEW_TOKENS = 96;

const pct = (x: number | null) => (x === null ? '—' : (100 * x).toFixed(1));
const cell = (text: string) => JSON.stringify(text).replaceAll('|', '\\|').replaceAll('`', '\\`');

interface Measured {
  greedy: Evaluation;
  sampled: Evaluation;
}

/** How the library reaches the prompt: rendered by the run's template, or exemplars as earlier chat turns. */
type Placement = { library: ExperienceLibrary } | { turns: ExperienceLibrary } | undefined;

/** The exemplars as earlier user/assistant turns of the chat, then the problem: each turn in the format the model was pretrained on. */
function asTurns(library: ExperienceLibrary) {
  const turns = library.exemplars.flatMap((e) => [
    { role: 'user' as const, content: e.item },
    { role: 'assistant' as const, content: e.output },
  ]);
  return (item: DatasetItem) => ({ messages: [...turns, ...item.messages!] });
}

async function measure(policy: OnnxPolicy, task: SkillTask, items: DatasetItem[], placement?: Placement): Promise<Measured> {
  const extra = placement === undefined ? {} : 'library' in placement ? { library: placement.library } : { prompt: asTurns(placement.turns) };
  const common = { policy, dataset: items, rewards: task.rewards, maxNewTokens: MAX_REPLY_TOKENS, seed: EVAL.samplerSeed, correct: { reward: 'exact' }, ...extra };
  return {
    greedy: await evaluate({ ...common, temperature: 0, samples: 1 }),
    sampled: await evaluate({ ...common, temperature: 1, samples: EVAL.samples }),
  };
}

interface Learned {
  library: ExperienceLibrary;
  seconds: number;
  warnings: number;
  /** Lessons mode: critiques asked for, those that parsed, and the first critic reply. */
  critiques: { asked: number; parsed: number; first?: string };
  /** Lessons mode: group updates (the critic's operations on the library), the operations proposed, applied and skipped. */
  updates: { asked: number; parsed: number; first?: string; proposed: number; applied: number; skipped: number };
}

async function learn(policy: OnnxPolicy, task: SkillTask, mode: LoopMode): Promise<Learned> {
  const started = performance.now();
  const run = trainingFreeGrpo({
    policy,
    dataset: task.dataset({ size: TRAIN.size, seed: TRAIN.seed, split: 'train' }),
    rewards: task.rewards,
    mode,
    groupSize: TRAIN.groupSize,
    epochs: TRAIN.epochs,
    batchSize: TRAIN.batchSize,
    temperature: TRAIN.temperature,
    maxNewTokens: MAX_REPLY_TOKENS,
    criticMaxNewTokens: CRITIC_MAX_NEW_TOKENS,
    seed: TRAIN.seed,
    task: task.name,
  });
  const critiques: Learned['critiques'] = { asked: 0, parsed: 0 };
  const updates: Learned['updates'] = { asked: 0, parsed: 0, proposed: 0, applied: 0, skipped: 0 };
  for await (const event of run) {
    if (event.type === 'critique' || event.type === 'group-update') {
      const tally = event.type === 'critique' ? critiques : updates;
      tally.asked += 1;
      if (event.exchange.parsed !== undefined) tally.parsed += 1;
      tally.first ??= event.exchange.outputs[0];
    } else if (event.type === 'operations') {
      updates.proposed += event.proposed.length;
      updates.applied += event.applied.length;
      updates.skipped += event.skipped.length;
    }
  }
  const result = await run.result();
  return { library: result.library, seconds: (performance.now() - started) / 1000, warnings: result.warnings, critiques, updates };
}

/** The first reply to each of the first `n` held-out problems. */
function replies(evaluation: Evaluation, n: number): string[] {
  return evaluation.items.slice(0, n).map((item) => cell(item.samples[0]?.text ?? ''));
}

/** The user message the policy saw (the library block included). */
function userText(evaluation: Evaluation): string {
  const prompt = evaluation.items[0]?.prompt;
  return prompt?.prompt ?? prompt?.messages?.map((m) => m.content).join('\n') ?? '';
}

export async function run(): Promise<string> {
  const policy = await loadOnnxPolicy({ model: SKILL_DIR });
  const rows: string[] = [];
  const notes: string[] = [];
  const lessonTotals = { critiques: 0, parsed: 0, updates: 0, proposed: 0, applied: 0 };
  type Row = 'base' | 'turns' | LoopMode;
  const means: Record<Row, [number, number]> = { base: [0, 0], exemplars: [0, 0], turns: [0, 0], lessons: [0, 0] };
  const add = (key: Row, m: Measured) => {
    means[key][0] += (m.greedy.summary.accuracy ?? 0) / skillTasks.length;
    means[key][1] += (m.sampled.summary.accuracy ?? 0) / skillTasks.length;
  };
  try {
    for (const task of skillTasks) {
      const items = task.dataset({ size: EVAL.size, seed: EVAL.seed });
      console.log(`  ${task.name}: base…`);
      const base = await measure(policy, task, items);
      add('base', base);
      rows.push(`| ${task.name} | base (no library) | — | ${pct(base.greedy.summary.accuracy)} | ${pct(base.sampled.summary.accuracy)} | ${base.sampled.summary.meanReward?.toFixed(3) ?? '—'} | — |`);
      notes.push(`- ${task.name}, held-out prompts ${items.slice(0, 3).map((i) => cell(i.messages![0].content)).join(', ')}; base greedy: ${replies(base.greedy, 3).join(', ')}`);
      for (const mode of ['exemplars', 'lessons'] as const) {
        console.log(`  ${task.name}: ${mode}…`);
        const { library, seconds, warnings, critiques, updates } = await learn(policy, task, mode);
        const after = await measure(policy, task, items, { library });
        add(mode, after);
        const size = mode === 'exemplars' ? `${library.exemplars.length} exemplars` : `${library.entries.length} lessons`;
        rows.push(`| ${task.name} | ${mode} | ${size} | ${pct(after.greedy.summary.accuracy)} | ${pct(after.sampled.summary.accuracy)} | ${after.sampled.summary.meanReward?.toFixed(3) ?? '—'} | ${seconds.toFixed(0)} |`);
        const seen = userText(after.greedy);
        notes.push(`  - ${mode} (${size}, ${warnings} warnings): greedy ${replies(after.greedy, 3).join(', ')}; prompt length ${seen.length} characters (base ${userText(base.greedy).length})`);
        if (mode === 'exemplars') {
          const turns = await measure(policy, task, items, { turns: library });
          add('turns', turns);
          rows.push(`| ${task.name} | exemplars as chat turns | ${size} | ${pct(turns.greedy.summary.accuracy)} | ${pct(turns.sampled.summary.accuracy)} | ${turns.sampled.summary.meanReward?.toFixed(3) ?? '—'} | — |`);
          notes.push(`  - exemplars as earlier chat turns: greedy ${replies(turns.greedy, 3).join(', ')}`);
        }
        if (mode === 'exemplars' && library.exemplars.length > 0) notes.push(`    - first exemplars kept: ${library.exemplars.slice(0, 2).map((e) => `${cell(e.item)} -> ${cell(e.output)} (reward ${e.score.toFixed(2)})`).join(', ')}`);
        if (mode === 'lessons') {
          lessonTotals.critiques += critiques.asked;
          lessonTotals.parsed += critiques.parsed;
          lessonTotals.updates += updates.asked;
          lessonTotals.proposed += updates.proposed;
          lessonTotals.applied += updates.applied;
          notes.push(`    - critiques: ${critiques.asked} asked, ${critiques.parsed} parsed; the first critic reply begins ${cell((critiques.first ?? '').slice(0, 80))}`);
          notes.push(`    - group updates: ${updates.asked} asked, ${updates.parsed} parsed, the first begins ${cell((updates.first ?? '').slice(0, 80))}; operations ${updates.proposed} proposed, ${updates.applied} applied, ${updates.skipped} skipped`);
        }
        if (mode === 'lessons' && library.entries.length > 0) notes.push(`    - lessons: ${library.entries.slice(0, 2).map((e) => cell(e.text)).join(', ')}`);
      }
    }
  } finally {
    await policy.dispose();
  }
  return [
    '## skill-free: Training-Free GRPO on the pretrained skill model, held-out accuracy before and after',
    '',
    `Bundled \`webgrpo-skill\`, Node CPU. Per task, a Training-Free run (\`trainingFreeGrpo\`) on ${TRAIN.size} problems of the task's training split (seed ${TRAIN.seed}), ${TRAIN.epochs} epoch, ${TRAIN.batchSize} problems per step, groups of ${TRAIN.groupSize} replies at temperature ${TRAIN.temperature}, at most ${MAX_REPLY_TOKENS} new tokens; exemplars mode (the best reply of a group with reward spread becomes a worked example, at most 8 kept), then lessons mode with the skill model as its own critic (at most ${CRITIC_MAX_NEW_TOKENS} new tokens per critic call). Held-out: \`evaluate()\` on ${EVAL.size} held-out problems per task (dataset seed ${EVAL.seed}, never in the corpus nor in training), exact match; greedy (one reply) and T=1 (${EVAL.samples} replies, sampler seed ${EVAL.samplerSeed}, the same draws before and after); after = the library rendered into every prompt with the default template, as the run does. Mean reward is the task's exact (1) + partial credit (0.5) at T=1.`,
    '',
    '| task | library | size | greedy exact % | T=1 exact % | T=1 mean reward | learn s |',
    '|---|---|---|---:|---:|---:|---:|',
    ...rows,
    ...(['base', 'exemplars', 'turns', 'lessons'] as const).map((key) => `| **mean** | ${key === 'turns' ? 'exemplars as chat turns' : key} | | ${pct(means[key][0])} | ${pct(means[key][1])} | | |`),
    '',
    `Over the four tasks, exemplars change held-out exact match by ${(100 * (means.exemplars[0] - means.base[0])).toFixed(1)} points greedy and ${(100 * (means.exemplars[1] - means.base[1])).toFixed(1)} at T=1; the same exemplars given as earlier chat turns (\`evaluate\`'s \`prompt\` option: every turn in the pretraining format, no preamble) by ${(100 * (means.turns[0] - means.base[0])).toFixed(1)} and ${(100 * (means.turns[1] - means.base[1])).toFixed(1)}; lessons by ${(100 * (means.lessons[0] - means.base[0])).toFixed(1)} and ${(100 * (means.lessons[1] - means.base[1])).toFixed(1)}. In lessons mode the critic is the 0.42M-parameter skill model itself: ${lessonTotals.parsed} of its ${lessonTotals.critiques} critiques parsed (the notes show what the lesson strings hold), its ${lessonTotals.updates} group updates proposed ${lessonTotals.proposed} operations and ${lessonTotals.applied} reached the library; an empty library leaves every prompt as it was, which is why those rows can equal the base. The skill model's second pretraining phase had a fifth of its chats in the exemplars template (1 to 6 worked examples of the same task, replies right 90% of the time against 50% without), so the exemplars rows say whether it learnt to use such a prompt on problems it never saw; chat turns and lessons were never in its corpus.`,
    '',
    'What the model writes (first held-out problems, greedy):',
    '',
    ...notes,
  ].join('\n');
}
