import { mapPromptText } from '../experience/render.js';
import type { PromptInput } from '../policy/types.js';
import type { RouterArm } from '../store/records.js';

/**
 * The prompt an arm sends: the item's, with the arm's instruction on a new line after the task.
 * The loop samples from it and the export writes it, so training data shows what was sampled.
 */
export function armPrompt(prompt: PromptInput, arm: RouterArm): PromptInput {
  const { instruction } = arm;
  return instruction ? mapPromptText(prompt, (text) => `${text}\n${instruction}`) : prompt;
}
