import { mapPromptText } from '../../experience/render.js';
import type { PromptInput } from '../../core/policy.js';

/** One arm a router run chooses between: a prompt or sampling variant of the one policy. */
export interface RouterArm {
  /** Stable id (the router's "model" name); unique within a run. */
  id: string;
  /** What a person reads. */
  label: string;
  /** Appended to the item's prompt (its last user message) on a new line. */
  instruction?: string;
  /** Multiplies the run's sampling temperature; default 1. */
  temperatureScale?: number;
}

/**
 * The prompt an arm sends: the item's, with the arm's instruction on a new line after the task.
 * The loop samples from it and the export writes it, so training data shows what was sampled.
 */
export function armPrompt(prompt: PromptInput, arm: RouterArm): PromptInput {
  const { instruction } = arm;
  return instruction ? mapPromptText(prompt, (text) => `${text}\n${instruction}`) : prompt;
}
