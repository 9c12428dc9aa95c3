/**
 * The exact text the model read for each group's prompt: the chat template and its special tokens
 * included (Policy.renderPrompt), rendered by the loaded model when it is the run's. Components
 * read `of`; reading is reactive, so a card shows the text once it arrives.
 */
import { SvelteMap } from 'svelte/reactivity';
import type { ItemResult, Policy } from '../../lib/index.js';

const keyOf = (runId: string, result: ItemResult) => `${runId}:${result.step}:${result.index}`;

export class RenderedPrompts {
  readonly #texts = new SvelteMap<string, string>();
  readonly #policy: () => Policy | null;

  constructor(policy: () => Policy | null) {
    this.#policy = policy;
  }

  of(runId: string, result: ItemResult): string | undefined {
    return this.#texts.get(keyOf(runId, result));
  }

  /** True when the loaded model can render the prompts of a run of `model`. */
  canRender(model: string): boolean {
    const policy = this.#policy();
    return !!policy?.renderPrompt && policy.info.model === model;
  }

  /** Renders a group's prompt with the loaded model, when it is the run's (`model`). */
  async ensure(runId: string, result: ItemResult, model: string): Promise<void> {
    const key = keyOf(runId, result);
    const policy = this.#policy();
    if (this.#texts.has(key) || !policy?.renderPrompt || policy.info.model !== model) return;
    const text = await policy.renderPrompt(result.prompt).catch(() => undefined);
    if (text !== undefined) this.#texts.set(key, text);
  }
}
