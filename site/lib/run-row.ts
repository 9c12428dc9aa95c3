/**
 * A run's row in the run list: a title that tells runs apart (task, method, model), the settings
 * that differ most between runs of one method, and its held-out exact match before -> after, so a
 * list of runs reads without opening each. Pure.
 */
import type { RunRecord } from '../../lib/index.js';
import { runMethod } from '../../lib/method.js';
import { percent } from './held-out.js';
import { plural } from './plural.js';
import { modelName } from './view.js';

const METHOD_NAMES: Record<string, string> = { exemplars: 'exemplars', lessons: 'lessons', gradient: 'head adapter', lora: 'LoRA', router: 'router' };

export interface RunRow {
  title: string;
  /** The run's key settings, in one line. */
  settings: string;
  /** Held-out exact match before -> after (greedy beside it), or null when the run has no judged evaluation. */
  heldOut: string | null;
}

export function runRow(run: RunRecord): RunRow {
  const method = runMethod(run);
  const c = run.config;
  const title = `${c.task ?? 'dataset'} · ${METHOD_NAMES[method] ?? method} · ${modelName(c.policy.model)}`;
  const steps = Math.ceil(run.itemCount / c.batchSize) * c.epochs;
  const own =
    run.kind === 'gradient'
      ? [`lr ${run.config.optimizer.lr}`, `rank ${run.config.adapter.rank}`]
      : run.kind === 'lora'
        ? [`lr ${run.config.optimizer.lr}`, `rank ${run.config.lora.r}`]
        : run.kind === 'router'
          ? [`router lr ${run.config.router.learningRate}`]
          : run.kind === 'training-free' && run.config.retrieveExperiences
            ? [`${run.config.retrieveExperiences} per prompt`]
            : [];
  const settings = [plural(run.itemCount, 'prompt'), plural(steps, 'step'), `G=${c.groupSize}`, `T=${c.temperature}`, ...own, ...((run.kind === 'gradient' || run.kind === 'lora') && run.config.dynamicSampling ? ['dynamic sampling'] : []), `seed ${c.seed}`].join(' · ');
  return { title, settings, heldOut: heldOutLine(run) };
}

function heldOutLine(run: RunRecord): string | null {
  const evaluations = run.evaluations ?? [];
  const before = evaluations.find((e) => e.epoch === 0);
  if (!before || before.summary.judged === 0) return null;
  const after = evaluations.filter((e) => e.epoch > 0).at(-1);
  const sampled = `${percent(before.summary.accuracy)} → ${after ? percent(after.summary.accuracy) : '…'}`;
  const greedyBefore = before.greedyPass?.summary;
  const greedy = greedyBefore ? `, greedy ${percent(greedyBefore.accuracy)} → ${after?.greedyPass ? percent(after.greedyPass.summary.accuracy) : '…'}` : '';
  return `held-out ${sampled}${greedyBefore ? ` at T=${before.summary.temperature}` : ''}${greedy}`;
}
