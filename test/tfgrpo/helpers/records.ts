/**
 * Small, valid records for store tests (what the loop would write, with made-up numbers): a run of
 * four items in batches of two over two epochs, and steps that follow its schedule.
 */
import type { DatasetItem, ItemResult, RunRecord, StepRecord, Policy, TrainingFreeStepPayload } from '../../../lib/index.js';
import { alphabetise } from '../../../lib/tasks/index.js';
import { resolveConfig } from '../../../lib/methods/training-free/options.js';

const stubPolicy: Policy = {
  info: { model: 'stub', backend: 'test' },
  generateGroup: async () => {
    throw new Error('not used');
  },
  dispose: async () => {},
};

export function sampleItems(n = 4): DatasetItem[] {
  return alphabetise.dataset({ size: n, seed: 5 });
}

export function sampleRun(id: string, items = sampleItems(), updatedAt = '2025-01-01T00:00:00.000Z'): RunRecord {
  const config = resolveConfig({ policy: stubPolicy, rewards: alphabetise.rewards, dataset: items, groupSize: 2, epochs: 2, batchSize: 2 });
  return {
    id,
    kind: 'training-free',
    status: 'running',
    createdAt: updatedAt,
    updatedAt,
    config,
    initialLibrary: { nextId: 1, entries: [{ id: 'G0', text: 'Start here.', createdStep: 0, updatedStep: 0 }], exemplars: [] },
    itemCount: items.length,
  };
}

export function sampleItemResult(step: number, position: number, index = position): ItemResult {
  return {
    step,
    epoch: 1,
    index,
    position,
    prompt: { messages: [{ role: 'user', content: `item ${index}` }] },
    experienceIds: ['G0'],
    rollouts: [0.25, 1].map((reward, row) => ({
      text: `answer ${row}`,
      tokenIds: [1, 2, 3],
      logprobs: [-0.5, -1.25, -0.125],
      finishReason: 'eos' as const,
      rewards: [reward, null, reward],
      reward,
      advantage: row === 0 ? -0.7071 : 0.7071,
    })),
    usage: { promptTokens: 5, completionTokens: 6 },
    stats: { scorable: 2, mean: 0.625, std: 0.53, spread: 0.75 },
    warnings: [],
  };
}

export function sampleStep(step: number, text = `Lesson of step ${step}.`): StepRecord<TrainingFreeStepPayload> {
  return {
    step,
    epoch: Math.ceil(step / 2),
    batch: ((step - 1) % 2) + 1,
    items: [sampleItemResult(step, 0), sampleItemResult(step, 1)],
    payload: {
      kind: 'training-free',
      proposed: [{ operation: 'ADD', content: text }],
      applied: [{ operation: 'ADD', id: `G${step}`, content: text, index: 0 }],
      skippedOperations: [],
      library: {
        nextId: step + 1,
        entries: Array.from({ length: step + 1 }, (_, i) => ({ id: `G${i}`, text: i === 0 ? 'Start here.' : `Lesson of step ${i}.`, createdStep: i, updatedStep: i })),
        exemplars: [],
      },
    },
    stats: { groups: 2, zeroSpreadGroups: 0, rollouts: 4, scorable: 4, meanReward: 0.625, stdReward: 0.43, },
    warnings: [],
    committedAt: `2025-01-0${step + 1}T00:00:00.000Z`,
  };
}
