/**
 * What a Training-Free GRPO run stores. Everything here is plain JSON-compatible data, so every
 * store (memory, IndexedDB, files) and the export format hold exactly the same thing.
 */
import type { ApplyResult, ExemplarCandidate, ExperienceLibrary, ExperienceOperation } from '../experience/types.js';
import type { AdapterCheckpoint } from '../grad/format.js';
import type { TrainStepMetrics } from '../grad/metrics.js';
import type { AdaptiveEntropyOptions } from '../math/adaptive-entropy.js';
import type { GrpoLossExtras } from '../math/batch.js';
import type { ImportanceSamplingLevel, LossType } from '../math/loss.js';
import type { LoraModule } from '../lora/weights.js';
import type { ChatMessage, FinishReason, PolicyInfo, PromptInput, Usage } from '../policy/types.js';
import type { RouterArm } from '../route/arm.js';
import type { GrpoRouterState, RouterUpdateStats } from '../route/router.js';

export type { RouterArm };

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** One training problem: a raw prompt or chat messages, and optionally its reference answer. */
export interface DatasetItem {
  prompt?: string;
  messages?: ChatMessage[];
  /** Ground truth for reward functions (and for the critic when `givenGroundTruth`). */
  answer?: JsonValue;
  /** Your own id for the item (kept, shown, never interpreted). */
  id?: string;
  /** Anything else your reward functions need. */
  meta?: { [key: string]: JsonValue };
}

export type LoopMode = 'lessons' | 'exemplars';

/** Prompt templates; `{{name}}` placeholders, all our own wording unless overridden. */
export interface PromptTemplates {
  /** Wraps a task with the library: `{{experiences}}`, `{{prompt}}`. */
  prompt: string;
  /** Critic: one rollout's summary. */
  summary: string;
  /** Critic: the group critique proposing lessons. */
  critique: string;
  /** Critic: the proposed lessons checked against the library, as operations. */
  groupUpdate: string;
  /** Critic: all operations of a batch merged into one consistent list. */
  batchMerge: string;
  /** Critic: asked once when a reply could not be parsed. */
  repair: string;
  /** The critic's system message. */
  criticSystem: string;
}

/** The resolved, serialisable options of a run (what `resume` needs besides the callables). */
export interface TrainingFreeConfig {
  mode: LoopMode;
  groupSize: number;
  epochs: number;
  batchSize: number;
  concurrency: number;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  maxNewTokens: number;
  criticTemperature: number;
  criticMaxNewTokens: number;
  givenGroundTruth: boolean;
  lessonsPerGroup: number;
  /** Reward functions by name and weight, in column order. */
  rewards: Array<{ name: string; weight: number }>;
  seed: number;
  shuffle: boolean;
  experienceTokenBudget: number;
  maxExperienceLength: number;
  exemplarThreshold: number;
  maxExemplars: number;
  templates: PromptTemplates;
  policy: PolicyInfo;
  critic: PolicyInfo;
  /** Name of the built-in task the dataset came from, if any. */
  task?: string;
  /** The held-out split the run evaluates on, when it was given one. */
  evaluation?: EvaluationConfig;
}

/**
 * What the gradient and router runs' configs share: the groups and their schedule, the sampling
 * settings, the rewards, the seed and the policy.
 */
export interface LoopConfig {
  /** Completions per item (the GRPO group). */
  groupSize: number;
  epochs: number;
  /** Items (groups) per step. */
  batchSize: number;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  maxNewTokens: number;
  /** Reward functions by name and weight, in column order. */
  rewards: Array<{ name: string; weight: number }>;
  seed: number;
  shuffle: boolean;
  policy: PolicyInfo;
  /** Name of the built-in task the dataset came from, if any. */
  task?: string;
  /** The held-out split the run evaluates on, when it was given one. */
  evaluation?: EvaluationConfig;
}

/** The resolved, serialisable options of a gradient GRPO run (`gradientGrpo`); `groupSize` is TRL's `numGenerations`. */
export interface GradientConfig extends LoopConfig {
  /** Optimizer updates per generation batch (TRL's num_iterations). */
  numIterations: number;
  /** The clipped objective: GrpoConfig's fields and the grpoLoss options. */
  loss: {
    lossType: LossType;
    clipParam: number;
    epsilonHigh?: number;
    delta?: number;
    beta: number;
    entropyCoeff: number;
    importanceSamplingLevel: ImportanceSamplingLevel;
    maxCompletionLength?: number;
    scaleRewards: 'group' | 'batch' | 'none';
    /** Completions that hit the length limit count for the advantages but not in the loss. */
    maskTruncatedCompletions?: boolean;
    /** TRL's adaptive entropy control of the bonus coefficient. */
    adaptiveEntropy?: AdaptiveEntropyOptions;
  } & GrpoLossExtras;
  optimizer: { lr: number; beta1: number; beta2: number; eps: number; weightDecay: number; maxGradNorm: number };
  /** The adapter on the LM head: z' = z + scale (h A) B. */
  adapter: { rank: number; scale: number; seed: number; hiddenSize: number; vocabSize: number };
}

/** The resolved, serialisable options of a full-depth LoRA GRPO run (`loraGrpo`): the gradient run's objective and optimizer, LoRA on every layer. */
export interface LoraRunConfig extends LoopConfig {
  numIterations: number;
  loss: GradientConfig['loss'];
  optimizer: GradientConfig['optimizer'];
  /**
   * PEFT's LoRA settings; a new adapter's A is drawn from `seed`, B starts at zero. `initial`: the
   * run started from a given adapter (which only its checkpoints keep).
   */
  lora: { r: number; alpha: number; useRslora: boolean; targetModules: LoraModule[]; seed: number; initial?: boolean };
  /** Where the forward and backward run; a resumed run trains there too. Absent in runs stored before the option: 'cpu'. */
  engine?: 'cpu' | 'webgpu';
}

/** The resolved, serialisable options of a router run (`routerGrpo`); each completion of a group is routed on its own. */
export interface RouterConfig extends LoopConfig {
  arms: RouterArm[];
  /** `GrpoRouter`'s options. */
  router: { learningRate: number; minSamples: number; temperature: number };
}

export type RunStatus = 'running' | 'aborted' | 'failed' | 'completed';

interface RunRecordBase {
  id: string;
  status: RunStatus;
  /** Why the run failed or stopped, when it did. */
  error?: string;
  createdAt: string;
  updatedAt: string;
  /** The experience library the run starts from (always empty for gradient and router runs). */
  initialLibrary: ExperienceLibrary;
  itemCount: number;
  /** Evaluations on the run's held-out split, by epoch (0: before the first step). */
  evaluations?: EvaluationRecord[];
}

export interface TrainingFreeRunRecord extends RunRecordBase {
  kind: 'training-free';
  config: TrainingFreeConfig;
}

export interface GradientRunRecord extends RunRecordBase {
  kind: 'gradient';
  config: GradientConfig;
}

export interface LoraRunRecord extends RunRecordBase {
  kind: 'lora';
  config: LoraRunConfig;
}

export interface RouterRunRecord extends RunRecordBase {
  kind: 'router';
  config: RouterConfig;
}

/** A stored run; `kind` tells which loop runs it (and the shape of its config). */
export type RunRecord = TrainingFreeRunRecord | GradientRunRecord | LoraRunRecord | RouterRunRecord;

export type WarningStage = 'summary' | 'critique' | 'group-update' | 'batch-merge' | 'reward' | 'exemplar';

/** Something the loop skipped or repaired instead of failing: kept with the step and emitted. */
export interface RunWarning {
  step: number;
  /** Dataset index of the item, for item-level warnings. */
  item?: number;
  stage: WarningStage;
  message: string;
}

export interface RolloutRecord {
  text: string;
  tokenIds: number[];
  logprobs: number[];
  /** Log-probs under the filtered distribution the tokens were drawn from, where they differ from `logprobs`. */
  sampledLogprobs?: number[];
  finishReason: FinishReason;
  /** One column per reward function; null where it could not score. */
  rewards: Array<number | null>;
  /** Weighted sum of the scorable columns; null when no function could score. */
  reward: number | null;
  advantage: number;
  /** The critic's summary of this rollout (lessons mode, groups with spread). */
  summary?: string;
  /** Router runs: the id of the arm this completion was routed to. */
  arm?: string;
}

/** One critic exchange: every raw reply (untrusted text, kept for audit) and what was used. */
export interface CriticExchange<T> {
  outputs: string[];
  /** The parsed result; absent when both tries failed (a warning says why). */
  parsed?: T;
}

export interface GroupStats {
  scorable: number;
  mean: number | null;
  std: number | null;
  /** max - min of the scorable rewards (0 with fewer than two). */
  spread: number;
}

/** Everything one dataset item produced in one step. */
export interface ItemResult {
  step: number;
  epoch: number;
  /** Index into the run's dataset. */
  index: number;
  /** Position in the step's batch. */
  position: number;
  /** The prompt as the policy saw it, experiences included. */
  prompt: PromptInput;
  /** Library ids put into the prompt. */
  experienceIds: string[];
  rollouts: RolloutRecord[];
  usage: Usage;
  stats: GroupStats;
  /** Why the critic did not look at this group, when it did not. */
  skipped?: 'zero-spread' | 'no-rewards';
  critique?: CriticExchange<string[]>;
  groupUpdate?: CriticExchange<ExperienceOperation[]>;
  exemplar?: ExemplarCandidate;
  warnings: RunWarning[];
}

export interface StepStats {
  groups: number;
  zeroSpreadGroups: number;
  rollouts: number;
  scorable: number;
  meanReward: number | null;
  stdReward: number | null;
}

/**
 * What a method adds to its step records: an object whose `kind` is the run's kind. The store,
 * validation and export hand it to the method's `record` (`RecordKind`) by that kind.
 */
export interface StepPayloadBase {
  kind: string;
}

/** A training-free step's payload: the batch update and the library after it. */
export interface TrainingFreeStepPayload {
  kind: 'training-free';
  /** Lessons mode: the batch merge exchange (absent when no group proposed anything). */
  merge?: CriticExchange<ExperienceOperation[]>;
  /** The operations handed to `applyOperations` (or the exemplar candidates' outcome). */
  proposed: ExperienceOperation[];
  applied: ApplyResult['applied'];
  skippedOperations: ApplyResult['skipped'];
  /** The library after the step (the library before step 1 is the run's `initialLibrary`). */
  library: ExperienceLibrary;
}

/** A gradient step's payload: the metrics of each optimizer update of the step, in order. */
export interface GradientStepPayload {
  kind: 'gradient';
  training: TrainStepMetrics[];
}

/** A LoRA step's payload: each update's metrics, and what following the adapter cost the sampler. */
export interface LoraStepPayload {
  kind: 'lora';
  training: TrainStepMetrics[];
  /** Milliseconds to merge the adapter into the model's weights and build the sampler's session after the step's updates. */
  refreshMs: number;
}

/** A router step's payload: the router after the step's update. */
export interface RouterStepPayload {
  kind: 'router';
  routing: StepRouting;
}

/** The built-in methods' step payloads. */
export type StepPayload = TrainingFreeStepPayload | GradientStepPayload | LoraStepPayload | RouterStepPayload;

/** The payload of a kind: a built-in one's own type, or any object of that kind for another method. */
export type PayloadOf<K extends string> = K extends StepPayload['kind'] ? Extract<StepPayload, { kind: K }> : StepPayloadBase & { kind: K };

/**
 * One committed step (one batch): the fields every method's steps share, and the method's
 * `payload`. `P` is the payload type; a method declares its own as `StepRecord<MyPayload>`.
 */
export interface StepRecord<P extends StepPayloadBase = StepPayload> {
  /** 1-based. */
  step: number;
  epoch: number;
  batch: number;
  items: ItemResult[];
  stats: StepStats;
  /** Step-level warnings (the batch merge); item warnings stay with their items. */
  warnings: RunWarning[];
  committedAt: string;
  /** The method's part of the step; `payload.kind` is the run's kind. */
  payload: P;
}

/** The router after a step: its state (what a resume restores), what it would route to, the update. */
export interface StepRouting {
  state: GrpoRouterState;
  /** `probabilities[queryClass][armId]`, for every query class seen so far. */
  probabilities: Record<string, Record<string, number>>;
  stats: RouterUpdateStats;
}

/** Store-side extras of a step commit, written in the same transaction. */
export interface StepExtras {
  /** Gradient and lora runs: the adapter and optimizer after the step (the store keeps the latest). */
  adapter?: AdapterCheckpoint;
}

/**
 * Which samples of an evaluation count as correct: `'exact'`, the text equal to the item's answer
 * (whitespace collapsed, case ignored; items without a text or number answer have no verdict), or
 * one reward function's score at least `atLeast`.
 */
export type CorrectRule = 'exact' | { reward: string; atLeast: number };

/** A loop's held-out evaluation, resolved and stored with the run's config (so a resume evaluates alike). */
export interface EvaluationConfig {
  /** The held-out items (never trained on). */
  items: DatasetItem[];
  /** Evaluate after every `every`-th epoch and after the last; epoch 0 (before training) always. */
  every: number;
  /** Samples per item (pass@k for k up to this). */
  samples: number;
  /** 0 is greedy decoding. Top-k, top-p and min-p are the run's. */
  temperature: number;
  maxNewTokens: number;
  /** Seed of the evaluation's own draws (never the training stream's). */
  seed: number;
  correct: CorrectRule;
}

/** One sample of an evaluated item: its text, every reward, the combined reward and the verdict. */
export interface EvaluatedSample {
  /** Model output: untrusted text. */
  text: string;
  finishReason: FinishReason;
  /** One column per reward function; null where it could not score. */
  rewards: Array<number | null>;
  /** Weighted sum of the scorable columns; null when no function could score. */
  reward: number | null;
  /** Whether the sample is correct; null where the rule has no verdict (no answer, unscorable). */
  correct: boolean | null;
}

/** One held-out item and its samples. */
export interface EvaluatedItem {
  /** Index in the evaluated dataset. */
  index: number;
  id?: string;
  /** The prompt as the policy saw it (a library's experiences included). */
  prompt: PromptInput;
  answer?: JsonValue;
  samples: EvaluatedSample[];
  /** Mean of the scorable samples' combined rewards. */
  meanReward: number | null;
  /** Correct samples; null when no sample had a verdict. */
  correct: number | null;
}

/** An evaluation's aggregates. */
export interface EvaluationSummary {
  items: number;
  /** Samples per item. */
  samples: number;
  temperature: number;
  /** Temperature 0: one greedy answer per item. */
  greedy: boolean;
  /** Reward function names, in column order. */
  rewardNames: string[];
  /** Mean combined reward over the scorable samples. */
  meanReward: number | null;
  /** Mean of each reward function over the samples it could score, by name. */
  meanRewards: Record<string, number | null>;
  /** Share of correct samples among those with a verdict (the exact-match rate, pass@1's mean). */
  accuracy: number | null;
  /**
   * pass@k for k = 1..samples (key k), the unbiased estimator averaged over the items with a
   * verdict on every sample; empty when there are none.
   */
  passAtK: Record<string, number>;
  /** Items with a verdict on every sample (those pass@k averages over). */
  judged: number;
  usage: Usage;
}

/** What `evaluate` returns: the aggregates and every item. */
export interface Evaluation {
  summary: EvaluationSummary;
  items: EvaluatedItem[];
}

/** An evaluation kept with its run: after which epoch (0: before training) and step it ran. */
export interface EvaluationRecord extends Evaluation {
  epoch: number;
  /** Steps committed when it ran. */
  step: number;
  evaluatedAt: string;
}

/** A whole run: what `exportRun` writes and `importRun` reads. */
export interface RunBundle {
  run: RunRecord;
  items: DatasetItem[];
  steps: StepRecord[];
  /** Finished items of the step in progress (not yet committed as a step). */
  pending: ItemResult[];
  /** Gradient and lora runs: the adapter checkpoint of the last committed step. */
  adapter?: AdapterCheckpoint;
}
