/**
 * The methods by kind: what the CLI, the export and the playground look a run's method up in,
 * instead of branching on its kind. `builtinMethods` lists the built-in ones (the gradient method
 * twice, once per adapter, as its runs are stored under two kinds); `registerMethod` adds one of
 * your own (one folder with its hooks, and one explicit call). Importing this module registers
 * nothing.
 */
import { InvalidInputError } from '../errors.js';
import type { AnyMethod, Method, MethodTypes } from '../run/method.js';
import { headMethod, loraMethod } from './gradient/method.js';
import { routerMethod } from './router/method.js';
import { trainingFreeMethod } from './training-free/method.js';

/** A method as the registry hands it out: its config, state and result are its own business. */
export type RegisteredMethod = AnyMethod;

/** The built-in methods, in the order the CLI and the playground offer them. */
export const builtinMethods: readonly RegisteredMethod[] = [trainingFreeMethod, headMethod, loraMethod, routerMethod];

/** Methods registered by the page or process (`registerMethod`), by kind. */
const registered = new Map<string, RegisteredMethod>();

/** Makes a method known by its kind: its runs validate, import, export and resume like the built-in ones. */
export function registerMethod<T extends MethodTypes>(method: Method<T>): void {
  if (method && builtinMethods.some((m) => m.kind === method.kind)) throw new InvalidInputError('method', `"${method.kind}" is a built-in method's kind; give yours another.`);
  if (!method || typeof method.kind !== 'string' || method.kind === '' || typeof method.open !== 'function' || typeof method.create !== 'function' || method.record?.kind !== method.kind || typeof method.record.config !== 'function') {
    throw new InvalidInputError('method', 'expected a method: { kind, record (a RecordKind of the same kind, with config), create, validateHandles, open, ... }.');
  }
  registered.set(method.kind, method);
}

/** The method of a run kind, or undefined for a kind nobody registered. */
export function methodOf(kind: string): RegisteredMethod | undefined {
  return builtinMethods.find((m) => m.kind === kind) ?? registered.get(kind);
}

/** Every known kind, built-in ones first. */
export function methodKinds(): string[] {
  return [...builtinMethods.map((m) => m.kind), ...registered.keys()];
}
