/**
 * The methods the playground offers, one entry per choice of the picker: its label and explanation,
 * the settings it suggests, and how it starts and resumes a run of the library's method it names
 * (the registry's `methodOf`: what the method trains is the library's `trains`, not said again here). Training-free runs loop on
 * the page around the model in its worker; gradient and LoRA runs loop in the worker, next to the
 * model they train (gradient-protocol.ts), and the page holds them as the same stream of events. Router
 * runs loop on the page like training-free ones.
 */
import {
  resumeRouterGrpo,
  resumeTrainingFreeGrpo,
  routerGrpo,
  trainingFreeGrpo,
  type DatasetItem,
  type LoopEvaluationOptions,
  type LoopMode,
  type Policy,
  type RewardFunction,
  type RouterEvent,
  type Store,
  type TrainingFreeEvent,
} from '../../lib/index.js';
import type { GradientEvent, LoraEvent } from '../../lib/grad.js';
import { methodOf, type RegisteredMethod } from '../../lib/method.js';
import { PLAYGROUND_ARMS } from './arms.js';
import { workerGradientRun } from './gradient-client.js';
import type { RewardSpec } from './gradient-protocol.js';
import { ADAPTER_SETTINGS, COMMON_SETTINGS, EXEMPLARS_SETTINGS, LESSONS_SETTINGS, ROUTER_SETTINGS, SKILL_GRADIENT_DEFAULTS, SKILL_LORA_DEFAULTS, SKILL_LORA_SORT_DEFAULTS, type NumericSetting, type Setup } from './setup.js';
import type { GroupStream } from './streaming.js';
import { runMemoryOptions } from './step-memory.js';
import { knowsSkillTasks } from './models.js';

export type PlaygroundEvent = TrainingFreeEvent | GradientEvent | LoraEvent | RouterEvent;

/** A run as the page drives it: its events, pulled one at a time. */
export interface PlaygroundRun extends AsyncIterable<PlaygroundEvent> {
  readonly runId: string;
}

export interface RunContext {
  /** The model, its groups watched while they are written. */
  policy: Policy;
  /** The model's worker, when it was loaded trainable (where gradient runs loop). */
  trainer: Worker | null;
  store: Store;
  signal: AbortSignal;
  /** The run's reward functions (the stored run's, on resume) and the task they come from. */
  rewards: RewardFunction[];
  task?: string;
  /** The group being written in the worker (gradient runs). */
  onStream(stream: GroupStream | null): void;
}

export interface StartContext extends RunContext {
  dataset: DatasetItem[];
  setup: Setup;
  /** The model's id in the playground's list (a LoRA run on a hub model is given the tab's memory as its budget). */
  modelId?: string;
  /** The held-out split the run is evaluated on, before training and after each epoch. */
  evaluation?: LoopEvaluationOptions;
}

export interface MethodChoice {
  id: string;
  /** The library's method its runs are of (their kind, and what of the model they train). */
  method: RegisteredMethod;
  label: string;
  /** One or two sentences for someone who has not read the paper. */
  summary: string;
  /** True when the model also writes critiques (the run then makes one-row critic calls). */
  needsCritic: boolean;
  /** Settings that suit it on the bundled webgrpo-tiny model, applied when it is picked. */
  defaults: Partial<Omit<Setup, 'task' | 'method'>>;
  /** Settings that suit it on the bundled webgrpo-skill model, applied instead when that is the model. */
  skillDefaults?: Partial<Omit<Setup, 'task' | 'method'>>;
  /** On webgrpo-skill, settings that suit it on one task, applied over `skillDefaults` when that task is picked. */
  skillTaskDefaults?: Readonly<Record<string, Partial<Omit<Setup, 'task' | 'method'>>>>;
  /** Settings that suit it on the bundled webgrpo-reader model, applied instead when that is the model. */
  readerDefaults?: Partial<Omit<Setup, 'task' | 'method'>>;
  /**
   * Tasks it can learn on each bundled model: skill tasks on webgrpo-skill, rewards on every token
   * on the random-weight webgrpo-tiny (whose list also serves hub models). Picking the method moves
   * a built-in task to the model's first (`learnableTasks`).
   */
  tasks?: { skill: readonly string[]; tiny: readonly string[] };
  /** The numeric settings it runs with (the form checks these before Start). */
  settings: readonly NumericSetting[];
  /** What to expect from it on the bundled random-weight model, where that is not learning. */
  onBundled?: string;
  start(context: StartContext): PlaygroundRun;
  resume(runId: string, context: RunContext): PlaygroundRun;
}

function trainingFree(mode: LoopMode): Pick<MethodChoice, 'method' | 'start' | 'resume'> {
  return {
    method: libraryMethod('training-free'),
    start: ({ policy, store, signal, rewards, task, dataset, evaluation, setup: s }) =>
      trainingFreeGrpo({
        mode,
        policy,
        dataset,
        rewards,
        store,
        signal,
        ...(evaluation ? { evaluation } : {}),
        groupSize: s.groupSize,
        epochs: s.epochs,
        batchSize: s.batchSize,
        temperature: s.temperature,
        maxNewTokens: s.maxNewTokens,
        // A critic reply is a few sentences of JSON; the library's 512 is slow on small local models.
        criticMaxNewTokens: Math.min(512, Math.max(128, 4 * s.maxNewTokens)),
        retrieveExperiences: s.retrieve,
        ...(mode === 'exemplars' ? { maxExemplars: s.maxExemplars } : {}),
        seed: s.seed,
        ...(task ? { task } : {}),
      }),
    resume: (runId, { policy, rewards, store, signal }) => resumeTrainingFreeGrpo(runId, { policy, rewards, store, signal }),
  };
}

/**
 * The skill tasks an adapter lifts on webgrpo-skill. The head adapter starts on copy-format, whose
 * replies at temperature 1 are right two times in three against nearly always when greedy: a skill
 * there to sharpen. LoRA, the first run's method, starts on sort-words, where the greedy model is
 * mostly wrong and LoRA teaches it (BENCHMARKS "teach"); the head adapter does not (BENCHMARKS "skill").
 */
const SKILL_LEARNABLE = ['copy-format', 'count-letter', 'sort-words', 'add-subtract'];
const LORA_SKILL_LEARNABLE = ['sort-words', 'copy-format', 'count-letter', 'add-subtract'];

const TRAINING_FREE_DEFAULTS = { items: 4, groupSize: 4, epochs: 2, batchSize: 2, temperature: 0.7, maxNewTokens: 48, retrieve: 0, maxExemplars: 8 };

/**
 * Exemplars and lessons on webgrpo-reader, as BENCHMARKS "exemplars" runs them on named-format:
 * 48 training prompts, groups of 8 at T=1 (a right answer among them is what becomes an exemplar
 * or a lesson), 4 per step, one epoch, 24 new tokens; each prompt shown the one experience
 * closest to it (the reader copies the format of what it is shown, so it must be shown its code's),
 * and up to 24 exemplars kept, room for every code when one prompt sees only one.
 */
const READER_TRAINING_FREE_DEFAULTS = { items: 48, groupSize: 8, epochs: 1, batchSize: 4, temperature: 1, maxNewTokens: 24, retrieve: 1, maxExemplars: 24 };
/** Lessons one problem per step: the batch merge then answers one operation, whose lesson fits the critic's 128 reply tokens uncut. */
const READER_LESSONS_DEFAULTS = { ...READER_TRAINING_FREE_DEFAULTS, batchSize: 1 };

const specs = (rewards: RewardFunction[]): RewardSpec[] => rewards.map((r) => ({ name: r.name, weight: r.weight ?? 1 }));

function worker(context: RunContext): Worker {
  if (!context.trainer) throw new Error('Gradient runs need the model loaded for training (with its hidden state); load it again.');
  return context.trainer;
}

function libraryMethod(kind: string): RegisteredMethod {
  const method = methodOf(kind);
  if (!method) throw new Error(`The library has no method of kind "${kind}".`);
  return method;
}

/**
 * A gradient run of either adapter, looping in the model's worker (gradient-worker.ts): the
 * settings both share, and the adapter's own shape from the form's rank.
 */
function inWorker(kind: 'gradient' | 'lora', adapter: (rank: number) => { head: { rank: number } } | { lora: { r: number; alpha: number } }): Pick<MethodChoice, 'method' | 'start' | 'resume'> {
  return {
    method: libraryMethod(kind),
    start: (context) => {
      const { dataset, task, rewards, evaluation, setup: s } = context;
      const settings = {
        ...(evaluation ? { evaluation } : {}),
        groupSize: s.groupSize,
        epochs: s.epochs,
        batchSize: s.batchSize,
        numIterations: s.iterations,
        temperature: s.temperature,
        maxNewTokens: s.maxNewTokens,
        seed: s.seed,
        ...(s.dynamicSampling ? { dynamicSampling: true } : {}),
        optimizer: { lr: s.lr },
        ...adapter(s.rank),
        // A hub model's LoRA run: the tab's memory as its budget, so it takes turns when only that fits (step-memory.ts).
        ...(kind === 'lora' && context.modelId ? runMemoryOptions(context.modelId) : {}),
      };
      const request = { kind: 'start' as const, method: kind, runId: crypto.randomUUID(), dataset, rewards: specs(rewards), settings, ...(task ? { task } : {}) };
      return workerGradientRun(worker(context), request, context);
    },
    resume: (runId, context) => workerGradientRun(worker(context), { kind: 'resume', method: kind, runId, rewards: specs(context.rewards), ...(context.task ? { task: context.task } : {}) }, context),
  };
}

export const METHODS: readonly MethodChoice[] = [
  {
    id: 'exemplars',
    label: 'Training-free: exemplars',
    summary: 'When a group’s best answer beats the group mean, it is kept as a worked example and shown in later prompts. No critic, so any model can run it; whether the examples help depends on the model.',
    needsCritic: false,
    defaults: TRAINING_FREE_DEFAULTS,
    readerDefaults: READER_TRAINING_FREE_DEFAULTS,
    settings: [...COMMON_SETTINGS, ...EXEMPLARS_SETTINGS],
    onBundled:
      'On the bundled random-weight model the exemplars curve is noise: it cannot read the examples it is shown. What learns here: Gradient (adapter) on digits or shout, or the Router.',
    ...trainingFree('exemplars'),
  },
  {
    id: 'lessons',
    label: 'Training-free: lessons',
    summary: 'The Training-Free GRPO paper: the model compares better and worse answers of each group and writes short lessons into the library. A model running here writes its critic’s JSON under a schema, so every reply parses.',
    needsCritic: true,
    defaults: TRAINING_FREE_DEFAULTS,
    readerDefaults: READER_LESSONS_DEFAULTS,
    settings: [...COMMON_SETTINGS, ...LESSONS_SETTINGS],
    onBundled:
      'On the bundled random-weight model the critic is the model itself: its lessons are gibberish, but it writes them under the lessons’ and operations’ JSON schemas, so every reply parses and every operation is valid and applied. Its context holds 2048 characters, so long critic prompts are cut (marked where they are). A model that can read its prompt writes lessons worth keeping.',
    ...trainingFree('lessons'),
  },
  {
    id: 'gradient',
    label: 'Gradient (adapter)',
    summary: 'Classic GRPO: the advantages weight a clipped policy-gradient loss, and each step updates a small low-rank adapter on the model’s output layer, right here on WebGPU or the CPU.',
    needsCritic: false,
    // What test/grad learns with: groups of 8, 16 tokens, two groups per step, AdamW at 0.02. Two
    // updates per step: the second sees the ratio to the sampling policy move, so clipping shows.
    defaults: { items: 8, groupSize: 8, epochs: 3, batchSize: 2, temperature: 1, maxNewTokens: 16, lr: 0.02, rank: 8, iterations: 2 },
    skillDefaults: SKILL_GRADIENT_DEFAULTS,
    tasks: { skill: SKILL_LEARNABLE, tiny: ['digits', 'shout'] },
    settings: [...COMMON_SETTINGS, ...ADAPTER_SETTINGS],
    ...inWorker('gradient', (rank) => ({ head: { rank } })),
  },
  {
    id: 'lora',
    label: 'LoRA (every layer)',
    summary:
      'GRPO as TRL runs it with PEFT: low-rank adapters on the attention and MLP projections of every layer, trained with an exact backward through the whole model, on WebGPU when the model runs there (else on the CPU). After each step the model samples with the updated A and B as inputs of its graph, its weights left as they are, so the adapter can change how the model reads its prompt, not only which tokens come out.',
    needsCritic: false,
    // The head adapter's shape, at the smaller learning rate LoRA on every layer takes; one update
    // per step keeps a step of the bundled model around a second on the CPU.
    defaults: { items: 8, groupSize: 8, epochs: 3, batchSize: 2, temperature: 1, maxNewTokens: 16, lr: 0.005, rank: 4, iterations: 1 },
    skillDefaults: SKILL_LORA_DEFAULTS,
    skillTaskDefaults: { 'sort-words': SKILL_LORA_SORT_DEFAULTS },
    tasks: { skill: LORA_SKILL_LEARNABLE, tiny: ['digits', 'shout'] },
    settings: [...COMMON_SETTINGS, ...ADAPTER_SETTINGS],
    ...inWorker('lora', (rank) => ({ lora: { r: rank, alpha: 2 * rank } })),
  },
  {
    id: 'router',
    label: 'Router (which prompt variant)',
    summary: 'Each completion is written by one of a few variants of the prompt or temperature (as asked, terse, cool, hot). A small GRPO router learns, per kind of question, which variant earns the most reward. No weights change.',
    needsCritic: false,
    // The router learns from every completion, a class at a time, so it wants many of them: with
    // these, alphabetise on the bundled model moves to Hot (p ≈ 0.8 after 16 steps, a few seconds).
    defaults: { items: 8, groupSize: 8, epochs: 4, batchSize: 2, temperature: 1, maxNewTokens: 24, routerLr: 0.1, minSamples: 5 },
    settings: [...COMMON_SETTINGS, ...ROUTER_SETTINGS],
    method: libraryMethod('router'),
    start: ({ policy, store, signal, rewards, task, dataset, evaluation, setup: s }) =>
      routerGrpo({
        policy,
        dataset,
        rewards,
        store,
        signal,
        ...(evaluation ? { evaluation } : {}),
        arms: [...PLAYGROUND_ARMS],
        groupSize: s.groupSize,
        epochs: s.epochs,
        batchSize: s.batchSize,
        temperature: s.temperature,
        maxNewTokens: s.maxNewTokens,
        seed: s.seed,
        router: { learningRate: s.routerLr, minSamples: s.minSamples },
        ...(task ? { task } : {}),
      }),
    resume: (runId, { policy, rewards, store, signal }) => resumeRouterGrpo(runId, { policy, rewards, store, signal }),
  },
];

/** The tasks `method` can learn on the model chosen (by its id in models.ts), or undefined for any task. */
export function learnableTasks(method: MethodChoice, modelId: string): readonly string[] | undefined {
  return method.tasks ? (knowsSkillTasks(modelId) ? method.tasks.skill : method.tasks.tiny) : undefined;
}

/** The settings `method` suggests for `task` on a model (an id of models.ts): its skill model's task settings over its skill ones, its reader ones, else its own. */
export function suggestedSettings(method: MethodChoice, modelId: string, task: string): Partial<Omit<Setup, 'task' | 'method'>> {
  if (modelId === 'reader' && method.readerDefaults) return method.readerDefaults;
  if (!knowsSkillTasks(modelId) || !method.skillDefaults) return method.defaults;
  return { ...method.skillDefaults, ...method.skillTaskDefaults?.[task] };
}

/** The picker's entry of `id`, or undefined where the playground offers no such method (a run of a method registered elsewhere). */
export function findChoice(id: string): MethodChoice | undefined {
  return METHODS.find((m) => m.id === id);
}

/** The picker's entry of `id`; an id it does not offer is an error that names it. */
export function choiceOf(id: string): MethodChoice {
  const choice = findChoice(id);
  if (!choice) throw new Error(`The playground has no method "${id}"; it offers ${METHODS.map((m) => m.id).join(', ')}.`);
  return choice;
}

/** Whether `choice`'s runs train part of the model: they need a local ONNX model loaded trainable, with its hidden state. */
export function trainsModel(choice: MethodChoice): boolean {
  return choice.method.trains !== undefined;
}
