/** The resolved, serialisable options each kind of run stores with its record (what a resume needs besides the callables). */
import type { AdaptiveEntropyOptions } from '../math/adaptive-entropy.js';
import type { GrpoLossExtras } from '../math/batch.js';
import type { ImportanceSamplingLevel, LossType } from '../math/loss.js';
import type { LoraModule } from '../lora/weights.js';
import type { PolicyInfo } from '../core/policy.js';
import type { RouterArm } from '../route/arm.js';
import type { EvaluationConfig } from './evaluation-record.js';

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
  /** DAPO's dynamic sampling (gradient and lora runs), when the run uses it. */
  dynamicSampling?: DynamicSamplingConfig;
}

/**
 * DAPO's dynamic sampling: a group whose rewards all equal carries no signal; it is sampled again
 * (fresh seeds) up to `maxResamples` times, and a group still flat is left out of the update.
 */
export interface DynamicSamplingConfig {
  maxResamples: number;
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
  engine?: 'cpu' | 'webgpu' | 'onnxruntime';
}

/** The resolved, serialisable options of a router run (`routerGrpo`); each completion of a group is routed on its own. */
export interface RouterConfig extends LoopConfig {
  arms: RouterArm[];
  /** `GrpoRouter`'s options. */
  router: { learningRate: number; minSamples: number; temperature: number };
}
