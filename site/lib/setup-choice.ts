/**
 * What picking a method, a task or a model does to the setup form: the settings the method
 * suggests on the model, and a built-in task moved to one the method can learn (and back when a
 * later method can run it). Pure: each returns the fields to change and the task to move back to;
 * the playground applies them.
 */
import { choiceOf, METHODS, learnableTasks, suggestedSettings, trainsModel } from './methods.js';
import { knowsSkillTasks, ONNX_MODELS } from './models.js';
import type { Setup } from './setup.js';

/** A task a method moved away from (`from`), to move back to while the form still shows `to`. */
export interface MovedTask {
  from: string;
  to: string;
}

export interface SetupChoice {
  /** The fields that change. */
  setup: Partial<Setup>;
  moved: MovedTask | null;
}

/**
 * Picks a method and the settings it suggests. A built-in task it cannot learn moves to one it
 * can, and back to the task chosen before when a later method can run that one.
 */
export function chooseMethod(setup: Setup, modelId: string, moved: MovedTask | null, id: string): SetupChoice {
  const method = choiceOf(id);
  const tasks = learnableTasks(method, modelId);
  let task = setup.task;
  if (moved && task === moved.to && (!tasks || tasks.includes(moved.from))) {
    task = moved.from;
    moved = null;
  }
  if (tasks && task !== 'upload' && !tasks.includes(task)) {
    moved = { from: moved?.from ?? task, to: tasks[0] };
    task = tasks[0];
  }
  return { setup: { task, ...suggestedSettings(method, modelId, task), method: method.id }, moved };
}

/**
 * Picks a task. Where the method suggests its own settings for the task picked or the one left
 * (LoRA on sort-words with webgrpo-skill), the method's settings for the new task are applied.
 */
export function chooseTask(setup: Setup, modelId: string, name: string): Partial<Setup> {
  const method = choiceOf(setup.method);
  const special = (task: string) => knowsSkillTasks(modelId) && method.skillTaskDefaults?.[task] !== undefined;
  return special(setup.task) || special(name) ? { task: name, ...suggestedSettings(method, modelId, name) } : { task: name };
}

/**
 * Picks a model. Moving onto or off the skill model changes what an adapter method can learn and
 * the settings it learns with, so those are applied again, as when the method is picked; so does
 * moving onto or off a model the method has its own settings for (the reader, for exemplars and lessons).
 * Onto an endpoint, a method that trains the model is swapped for the first that does not.
 */
export function chooseModel(setup: Setup, from: string, to: string, moved: MovedTask | null): SetupChoice {
  const method = choiceOf(setup.method);
  // An endpoint has no weights here to train: a method that trains them gives way to the first that does not.
  if (trainsModel(method) && !ONNX_MODELS.some((m) => m.id === to)) return chooseMethod(setup, to, moved, METHODS.find((m) => !trainsModel(m))!.id);
  if (knowsSkillTasks(from) !== knowsSkillTasks(to) && method.tasks) return chooseMethod(setup, to, moved, setup.method);
  const suggested = suggestedSettings(method, to, setup.task);
  return { setup: suggested !== suggestedSettings(method, from, setup.task) ? { ...suggested } : {}, moved };
}
