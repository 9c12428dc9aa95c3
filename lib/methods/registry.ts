/**
 * The methods by kind: what the export, the CLI and the playground look a run's method up in,
 * instead of branching on its kind. The built-in ones are here; `registerMethod` adds another
 * (a method of your own: one folder with its hooks, and one registration).
 */
import { InvalidInputError } from '../errors.js';
import type { Method } from '../run/method.js';
import type { LoopHandles } from '../run/options.js';
import { registerResume } from '../run/run.js';
import { gradientMethodHooks } from './gradient/method.js';
import { loraMethodHooks } from './lora/method.js';
import { routerMethod } from './router/method.js';
import { trainingFreeMethod } from './training-free/method.js';

/** A method as the registry hands it out: its state, handles and result are its own business. */
export type RegisteredMethod = Method<string, unknown, LoopHandles, unknown>;

const METHODS = new Map<string, RegisteredMethod>();

/** Makes a method known by its kind: its runs validate, import, export and resume like the built-in ones (its `record` is what stores read them with). */
export function registerMethod<K extends string, S, H extends LoopHandles, R>(method: Method<K, S, H, R>): void {
  if (!method || typeof method.kind !== 'string' || method.kind === '' || typeof method.finishStep !== 'function' || method.record?.kind !== method.kind || typeof method.record.config !== 'function') {
    throw new InvalidInputError('method', 'expected a method: { kind, resumeWith, record (a RecordKind of the same kind, with config), open, finishStep, epochEnd, result, ... }.');
  }
  METHODS.set(method.kind, method as unknown as RegisteredMethod);
  registerResume(method.kind, method.resumeWith);
}

/** The method of a run kind, or undefined for a kind nobody registered. */
export function methodOf(kind: string): RegisteredMethod | undefined {
  return METHODS.get(kind);
}

/** Every registered kind, built-in ones first. */
export function methodKinds(): string[] {
  return [...METHODS.keys()];
}

registerMethod(trainingFreeMethod);
registerMethod(gradientMethodHooks);
registerMethod(loraMethodHooks);
registerMethod(routerMethod);
