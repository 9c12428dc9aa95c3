/**
 * The loops' runs for the crash matrix, each on a deterministic model: the training-free loop
 * replays a recording (with the export after every epoch), the router loop samples the toy
 * policy, the gradient loop trains an adapter on the bundled ONNX model's head and the lora loop
 * LoRA on its every layer. `start` and `resume` drive one to its end on a store.
 */
import { readFile } from 'node:fs/promises';
import { replayPolicy, resumeRouterGrpo, resumeTrainingFreeGrpo, routerGrpo, trainingFreeGrpo, type EpochHook, type RewardFunction, type Store } from '../../lib/index.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import { standardShape } from '../tfgrpo/helpers/fixture.js';

export type LoopKind = 'training-free' | 'router' | 'gradient' | 'lora';

/** What `webgrpo train --export-jsonl` writes. */
export const EXPORT = { format: 'conversational', include: ['reward', 'advantage', 'groupId', 'completionId'] } as const;

const routerRewards: RewardFunction[] = [{ name: 'short', score: ({ text }) => 1 / (1 + text.length) }];

export interface Handles {
  /** The training-free run's recording (JSON text). */
  recording: string;
  onEpoch?: EpochHook;
}

export async function drive(kind: LoopKind, mode: 'start' | 'resume', store: Store, handles: Handles): Promise<string> {
  if (kind === 'training-free') {
    const policy = replayPolicy(handles.recording);
    const shape = standardShape();
    const run =
      mode === 'start'
        ? trainingFreeGrpo({ ...shape, policy, store, runId: 'r', ...(handles.onEpoch ? { onEpoch: handles.onEpoch } : {}) })
        : resumeTrainingFreeGrpo('r', { policy, rewards: shape.rewards, store, ...(handles.onEpoch ? { onEpoch: handles.onEpoch } : {}) });
    return (await run.result()).status;
  }
  if (kind === 'router') {
    const policy = createToyPolicy();
    const run =
      mode === 'start'
        ? routerGrpo({
            policy,
            store,
            runId: 'r',
            rewards: routerRewards,
            dataset: [{ prompt: 'one' }, { prompt: 'two 2' }, { prompt: 'three' }, { prompt: 'four 4' }],
            arms: [
              { id: 'plain', label: 'As asked' },
              { id: 'brief', label: 'Brief', instruction: 'Be brief.' },
              { id: 'hot', label: 'Hot', temperatureScale: 2 },
            ],
            groupSize: 4,
            epochs: 2,
            batchSize: 2,
            maxNewTokens: 6,
            seed: 3,
            router: { learningRate: 0.3, minSamples: 2 },
          })
        : resumeRouterGrpo('r', { policy, rewards: routerRewards, store });
    return (await run.result()).status;
  }
  const { gradientGrpo, resumeGradientGrpo, loraGrpo, resumeLoraGrpo } = await import('../../lib/grad.js');
  const { bundledModelPath, loadOnnxPolicy } = await import('../../lib/onnx.js');
  const { digits } = await import('../../lib/tasks/index.js');
  if (kind === 'lora') {
    const policy = await loadOnnxPolicy({ model: await bundledModelPath() });
    try {
      const run =
        mode === 'start'
          ? loraGrpo({ policy, store, runId: 'r', dataset: digits.dataset({ size: 4, seed: 1 }), rewards: digits.rewards, task: 'digits', groupSize: 4, batchSize: 2, epochs: 1, maxNewTokens: 6, seed: 1, lora: { r: 2 } })
          : resumeLoraGrpo('r', { policy, rewards: digits.rewards, store });
      return (await run.result()).status;
    } finally {
      await policy.dispose();
    }
  }
  const policy = await loadOnnxPolicy({ model: await bundledModelPath(), hiddenState: true });
  try {
    const run =
      mode === 'start'
        ? gradientGrpo({ policy, store, runId: 'r', dataset: digits.dataset({ size: 4, seed: 1 }), rewards: digits.rewards, task: 'digits', groupSize: 4, batchSize: 2, epochs: 1, maxNewTokens: 6, seed: 1 })
        : resumeGradientGrpo('r', { policy, rewards: digits.rewards, store });
    return (await run.result()).status;
  } finally {
    await policy.dispose();
  }
}

export async function readRecording(path: string): Promise<string> {
  return readFile(path, 'utf8');
}
