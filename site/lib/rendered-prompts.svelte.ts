/**
 * The exact text the model read for each group's prompt: the chat template and its special tokens
 * included (Policy.renderPrompt), rendered by the loaded model when it is the run's. A card reads
 * `of` in a `$derived` once its prompt is opened and awaits it in its markup: reading changes no
 * state, it hands out the one rendering of each group.
 */
import type { ItemResult, Policy } from '../../lib/index.js';

const keyOf = (runId: string, result: ItemResult) => `${runId}:${result.step}:${result.index}`;

export class RenderedPrompts {
  readonly #texts = new Map<string, Promise<string | undefined>>();
  readonly #policy: () => Policy | null;

  constructor(policy: () => Policy | null) {
    this.#policy = policy;
  }

  /** True when the loaded model can render the prompts of a run of `model`. */
  canRender(model: string): boolean {
    const policy = this.#policy();
    return !!policy?.renderPrompt && policy.info.model === model;
  }

  /**
   * A group's prompt as the loaded model renders it, when it is the run's (`model`): the promise of
   * the text (undefined where rendering failed), or undefined while no such model is loaded.
   */
  of(runId: string, result: ItemResult, model: string): Promise<string | undefined> | undefined {
    // Read first, so a card asks again when another model is loaded (after a failed rendering too).
    const policy = this.#policy();
    const key = keyOf(runId, result);
    const kept = this.#texts.get(key);
    if (kept) return kept;
    if (!policy?.renderPrompt || policy.info.model !== model) return undefined;
    const text = policy.renderPrompt(result.prompt).catch(() => {
      // A failed rendering is tried again with the next model loaded.
      this.#texts.delete(key);
      return undefined;
    });
    this.#texts.set(key, text);
    return text;
  }
}
