/**
 * Checks of what a run keeps of its held-out evaluation: the split and its settings in the config,
 * and each evaluation record in the run's `evaluations` (imports go through these).
 */
import { arr, bool, fail, int, nullableNum, num, obj, str } from '../../core/shape.js';

/** A run's held-out split and how it is sampled and judged (its items are checked as a dataset by the caller). */
export function validateEvaluationConfig(value: unknown, at: string): { items: unknown } {
  const c = obj(value, at);
  for (const key of ['every', 'samples', 'maxNewTokens'] as const) int(c[key], `${at}.${key}`, 1);
  int(c.seed, `${at}.seed`);
  if (num(c.temperature, `${at}.temperature`) < 0) fail(`${at}.temperature`, 'expected a number >= 0.');
  if (c.alsoGreedy !== undefined) bool(c.alsoGreedy, `${at}.alsoGreedy`);
  if (c.correct !== 'exact') {
    const rule = obj(c.correct, `${at}.correct`);
    str(rule.reward, `${at}.correct.reward`);
    num(rule.atLeast, `${at}.correct.atLeast`);
  }
  return { items: c.items };
}

/** One stored evaluation: its epoch, its aggregates and every item's samples. */
export function validateEvaluation(value: unknown, at: string): void {
  const e = obj(value, at);
  int(e.epoch, `${at}.epoch`);
  int(e.step, `${at}.step`);
  str(e.evaluatedAt, `${at}.evaluatedAt`);
  validateEvaluated(e, at);
  if (e.greedyPass !== undefined) validateEvaluated(obj(e.greedyPass, `${at}.greedyPass`), `${at}.greedyPass`);
}

/** An evaluation's aggregates and every item's samples. */
function validateEvaluated(e: Record<string, unknown>, at: string): void {
  const summary = obj(e.summary, `${at}.summary`);
  for (const key of ['items', 'samples', 'judged'] as const) int(summary[key], `${at}.summary.${key}`);
  for (const key of ['meanReward', 'accuracy'] as const) nullableNum(summary[key], `${at}.summary.${key}`);
  for (const [k, v] of Object.entries(obj(summary.passAtK, `${at}.summary.passAtK`))) num(v, `${at}.summary.passAtK.${k}`);
  arr(e.items, `${at}.items`).forEach((value, i) => {
    const p = `${at}.items[${i}]`;
    const item = obj(value, p);
    int(item.index, `${p}.index`);
    obj(item.prompt, `${p}.prompt`);
    arr(item.samples, `${p}.samples`).forEach((sample, j) => {
      const q = `${p}.samples[${j}]`;
      const s = obj(sample, q);
      str(s.text, `${q}.text`);
      arr(s.rewards, `${q}.rewards`).forEach((v, k) => nullableNum(v, `${q}.rewards[${k}]`));
      nullableNum(s.reward, `${q}.reward`);
      if (s.correct !== null) bool(s.correct, `${q}.correct`);
    });
  });
}
