/**
 * A method defined only in the tests, to prove that a new method is one set of hooks and one
 * registration: best-of-G selection keeps, per item, the completion with the highest reward. It
 * runs through the driver, the stores, validation, export and resume without any of them knowing
 * it. Its step payload is `picks` (the best completion of each item of the step), and its result
 * is every pick of the run.
 */
import {
  InvalidInputError,
  type DatasetItem,
  type GenerateGroupOptions,
  type GroupResult,
  type LoopHandles,
  type Policy,
  type RewardFunction,
  type Run,
  type StepRecord,
  type Store,
} from '../../lib/index.js';
import { registerMethod, resumeRun, startRun, type Method, type RecordKind } from '../../lib/method.js';
import { mulberry32 } from '../../lib/math.js';

export interface Pick {
  step: number;
  index: number;
  text: string;
  reward: number;
}

export interface BestOfGResult {
  runId: string;
  status: 'completed' | 'aborted';
  stepsCompleted: number;
  picks: Pick[];
}

export interface BestOfGOptions extends LoopHandles {
  dataset: DatasetItem[];
  groupSize?: number;
  epochs?: number;
  batchSize?: number;
  concurrency?: number;
  seed?: number;
  runId?: string;
}

/** The method's part of each step record. */
interface BestOfGPayload {
  kind: 'best-of-g';
  picks: Pick[];
}

const record: RecordKind = {
  kind: 'best-of-g',
  config(value, at) {
    const c = value as Record<string, unknown>;
    for (const key of ['groupSize', 'epochs', 'batchSize', 'concurrency'] as const) {
      if (!Number.isInteger(c?.[key])) throw new InvalidInputError(`${at}.${key}`, 'expected an integer.');
    }
  },
  step(payload, at) {
    if (!Array.isArray(payload.picks)) throw new InvalidInputError(`${at}.picks`, 'expected an array.');
  },
};

export const bestOfG: Method<{ kind: 'best-of-g'; result: BestOfGResult; payload: BestOfGPayload; options: BestOfGOptions }> = {
  kind: 'best-of-g',
  record,
  create: (options) => ({
    config: {
      groupSize: options.groupSize ?? 4,
      epochs: options.epochs ?? 1,
      batchSize: options.batchSize ?? 2,
      concurrency: options.concurrency ?? 1,
      temperature: 1,
      topK: 0,
      topP: 1,
      minP: 0,
      maxNewTokens: 8,
      rewards: options.rewards.map((r) => ({ name: r.name, weight: r.weight ?? 1 })),
      seed: options.seed ?? 0,
      shuffle: true,
      policy: { ...options.policy.info },
    },
  }),
  validateHandles(handles) {
    if (!handles.policy || !Array.isArray(handles.rewards)) throw new InvalidInputError('policy', 'expected a policy and rewards.');
  },
  async open({ run, store }) {
    // The store hands out any method's steps; these are this method's own.
    const steps = (await store.listSteps(run.id)) as unknown as StepRecord<BestOfGPayload>[];
    const picks = steps.flatMap((s) => s.payload.picks);
    return {
      concurrency: run.config.concurrency as number,
      async finishStep({ plan }, items) {
        const step = items.map((item) => {
          const best = item.rollouts.reduce((a, b) => ((b.reward ?? -Infinity) > (a.reward ?? -Infinity) ? b : a));
          return { step: plan.step, index: item.index, text: best.text, reward: best.reward ?? 0 };
        });
        picks.push(...step);
        return { payload: { kind: 'best-of-g', picks: step }, end: { picks: step } };
      },
      result: async ({ runId, status, stepsCompleted }) => ({ runId, status, stepsCompleted, picks }),
    };
  },
};
registerMethod(bestOfG);

export type BestOfGRun = Run<{ type: string; [key: string]: unknown }, BestOfGResult>;

export function bestOfGRun(options: BestOfGOptions): BestOfGRun {
  return startRun(bestOfG, options);
}

export function resumeBestOfG(runId: string, options: LoopHandles & { store: Store }): BestOfGRun {
  return resumeRun([bestOfG], runId, options);
}

/** Answers with a seeded number of "a"s: a pure function of the request, like a seeded model. */
export function countingPolicy(delayMs = 0): Policy {
  return {
    info: { model: 'counting', backend: 'test' },
    async generateGroup(options: GenerateGroupOptions): Promise<GroupResult> {
      if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
      const random = mulberry32(options.seed ?? 0);
      const completions = Array.from({ length: options.groupSize }, () => {
        const text = 'a'.repeat(1 + Math.floor(random() * 6));
        return { text, tokenIds: Array.from(text, () => 97), logprobs: Array.from(text, () => -0.3), finishReason: 'eos' as const };
      });
      return { promptTokenIds: [1], completions, usage: { promptTokens: options.groupSize, completionTokens: options.groupSize } };
    },
    async dispose() {},
  };
}

export const lengthReward: RewardFunction = { name: 'length', score: ({ text }) => text.length };
