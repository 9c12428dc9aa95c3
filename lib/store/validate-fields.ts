/**
 * The field checks every validator of stored records uses, and the config fields every run kind
 * shares. Errors are `InvalidInputError`s whose `argument` is the path to the bad field.
 */
import { InvalidInputError } from '../errors.js';
import type { JsonValue } from './records.js';

export type Obj = Record<string, unknown>;

export function fail(at: string, message: string): never {
  throw new InvalidInputError(at, message);
}
export function obj(value: unknown, at: string): Obj {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(at, 'expected an object.');
  return value as Obj;
}
export function arr(value: unknown, at: string): unknown[] {
  if (!Array.isArray(value)) fail(at, 'expected an array.');
  return value;
}
export function str(value: unknown, at: string): string {
  if (typeof value !== 'string') fail(at, 'expected a string.');
  return value;
}
export function num(value: unknown, at: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(at, 'expected a finite number.');
  return value;
}
export function int(value: unknown, at: string, min = 0): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) fail(at, `expected an integer >= ${min}.`);
  return value;
}
export function bool(value: unknown, at: string): boolean {
  if (typeof value !== 'boolean') fail(at, 'expected true or false.');
  return value;
}
export function oneOf<T extends string>(value: unknown, options: readonly T[], at: string): T {
  if (!options.includes(value as T)) fail(at, `expected one of ${options.map((o) => `"${o}"`).join(', ')}.`);
  return value as T;
}
export function nullableNum(value: unknown, at: string): void {
  if (value !== null) num(value, at);
}

export function isJson(value: unknown, depth = 0): value is JsonValue {
  if (depth > 64) return false;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((v) => isJson(v, depth + 1));
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value);
    return (proto === Object.prototype || proto === null) && Object.values(value).every((v) => isJson(v, depth + 1));
  }
  return false;
}

/** The fields of `LoopConfig` (gradient and router runs): groups, schedule, sampling, rewards, policy. */
export function validateLoopConfig(value: unknown, at: string): Obj {
  const c = obj(value, at);
  for (const key of ['groupSize', 'epochs', 'batchSize', 'maxNewTokens'] as const) int(c[key], `${at}.${key}`, 1);
  for (const key of ['topK', 'seed'] as const) int(c[key], `${at}.${key}`);
  for (const key of ['temperature', 'topP', 'minP'] as const) num(c[key], `${at}.${key}`);
  bool(c.shuffle, `${at}.shuffle`);
  validateRewardsAndPolicy(c, at);
  return c;
}

/** The fields every kind's config has: the reward columns, the policy, the task's name. */
export function validateRewardsAndPolicy(c: Obj, at: string): void {
  arr(c.rewards, `${at}.rewards`).forEach((r, i) => {
    const reward = obj(r, `${at}.rewards[${i}]`);
    str(reward.name, `${at}.rewards[${i}].name`);
    num(reward.weight, `${at}.rewards[${i}].weight`);
  });
  const info = obj(c.policy, `${at}.policy`);
  str(info.model, `${at}.policy.model`);
  str(info.backend, `${at}.policy.backend`);
  if (c.task !== undefined) str(c.task, `${at}.task`);
}
