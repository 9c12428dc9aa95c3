/**
 * The setup form of a stored run: the method, task and settings it was started with (the model is
 * models.ts' `onnxModelOf`), so the form shows the run in view and Start runs what the page shows,
 * after a reload too. Pure.
 */
import type { RunRecord } from '../../lib/index.js';
import { runMethod } from '../../lib/method.js';
import { builtinTasks } from '../../lib/tasks.js';
import type { Setup } from './setup.js';
import { HUMAN_REWARD } from './tasks.js';

/** The form's fields as `run` had them; those its method has not keep `current`'s. */
export function setupOfRun(run: RunRecord, current: Setup): Setup {
  const c = run.config;
  const task = c.task && c.task in builtinTasks ? c.task : null;
  const setup: Setup = {
    ...current,
    method: runMethod(run),
    // An upload's file is not kept in the form: its settings come back, the dataset stays the form's.
    ...(task ? { task, items: run.itemCount } : {}),
    rateMyself: c.rewards.some((r) => r.name === HUMAN_REWARD),
    ...(!task && c.rewards[0] && c.rewards[0].name !== HUMAN_REWARD ? { reward: c.rewards[0].name } : {}),
    groupSize: c.groupSize,
    epochs: c.epochs,
    batchSize: c.batchSize,
    temperature: c.temperature,
    maxNewTokens: c.maxNewTokens,
    seed: c.seed,
  };
  if (run.kind === 'gradient' || run.kind === 'lora') {
    Object.assign(setup, { lr: run.config.optimizer.lr, iterations: run.config.numIterations, dynamicSampling: run.config.dynamicSampling !== undefined });
    setup.rank = run.kind === 'gradient' ? run.config.adapter.rank : run.config.lora.r;
  } else if (run.kind === 'router') {
    Object.assign(setup, { routerLr: run.config.router.learningRate, minSamples: run.config.router.minSamples });
  } else if (run.kind === 'training-free') {
    Object.assign(setup, { retrieve: run.config.retrieveExperiences ?? 0, maxExemplars: run.config.maxExemplars });
  }
  return setup;
}
