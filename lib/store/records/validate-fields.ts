/**
 * The config fields the loops share (`LoopConfig`), which each method's config check builds on.
 * Errors are `InvalidInputError`s whose `argument` is the path to the bad field.
 */
import { arr, bool, int, num, obj, str, type Obj } from '../../core/shape.js';

/** The fields of `LoopConfig`: groups, schedule, sampling, rewards, policy, task. */
export function validateLoopConfig(value: unknown, at: string): Obj {
  const c = obj(value, at);
  for (const key of ['groupSize', 'epochs', 'batchSize', 'maxNewTokens'] as const) int(c[key], `${at}.${key}`, 1);
  for (const key of ['topK', 'seed'] as const) int(c[key], `${at}.${key}`);
  for (const key of ['temperature', 'topP', 'minP'] as const) num(c[key], `${at}.${key}`);
  bool(c.shuffle, `${at}.shuffle`);
  if (c.dynamicSampling !== undefined) int(obj(c.dynamicSampling, `${at}.dynamicSampling`).maxResamples, `${at}.dynamicSampling.maxResamples`);
  arr(c.rewards, `${at}.rewards`).forEach((r, i) => {
    const reward = obj(r, `${at}.rewards[${i}]`);
    str(reward.name, `${at}.rewards[${i}].name`);
    num(reward.weight, `${at}.rewards[${i}].weight`);
  });
  const info = obj(c.policy, `${at}.policy`);
  str(info.model, `${at}.policy.model`);
  str(info.backend, `${at}.policy.backend`);
  if (c.task !== undefined) str(c.task, `${at}.task`);
  return c;
}
