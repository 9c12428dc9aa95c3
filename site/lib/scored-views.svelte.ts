/**
 * The scored token views of the groups in view (token-views.ts): the loaded model scores a group's
 * completions again, once, when a view that needs it is picked. Only the model that wrote the run
 * can score it; otherwise `of` says why there is nothing to show.
 */
import { SvelteMap } from 'svelte/reactivity';
import type { ItemResult, Policy, RunRecord } from '../../lib/index.js';
import type { GrpoLossConfig } from '../../lib/math.js';
import { kindView } from './kind-view.js';
import { scoredViews, type ScoredViews } from './token-views.js';

const keyOf = (runId: string, result: ItemResult) => `${runId}:${result.step}:${result.index}`;

export class ScoredTokenViews {
  readonly #groups = new SvelteMap<string, ScoredViews | { unavailable: string }>();
  readonly #policy: () => Policy | null;
  /** The model the kept views were scored with (or found unavailable without). */
  #scoredWith: Policy | null = null;

  constructor(policy: () => Policy | null) {
    this.#policy = policy;
  }

  of(runId: string, result: ItemResult): ScoredViews | { unavailable: string } | undefined {
    return this.#groups.get(keyOf(runId, result));
  }

  /** Scores a stored group with the loaded model, unless done already (with that model). */
  async ensure(run: RunRecord, result: ItemResult): Promise<void> {
    const key = keyOf(run.id, result);
    const policy = this.#policy();
    if (policy !== this.#scoredWith) {
      this.#groups.clear();
      this.#scoredWith = policy;
    }
    if (this.#groups.has(key)) return;
    const why = !policy
      ? 'Load the model this run used: the view scores its completions again.'
      : !policy.scoreCompletions
        ? 'This model cannot score given completions (hosted APIs rarely can).'
        : policy.info.model !== run.config.policy.model
          ? 'The model loaded is not the one this run used.'
          : (kindView(run).unscorable ??
            (result.rollouts.some((r) => r.tokenIds.length !== r.logprobs.length || r.tokenIds.length === 0)
              ? 'This group has no token log-probs to compare with.'
              : null));
    if (why) {
      this.#groups.set(key, { unavailable: why });
      return;
    }
    try {
      const scored = await policy!.scoreCompletions!({ ...result.prompt, completions: result.rollouts.map((r) => r.tokenIds), temperature: run.config.temperature });
      const loss: GrpoLossConfig = kindView(run).loss(run);
      this.#groups.set(key, scoredViews(result.rollouts, scored, loss));
    } catch (error) {
      this.#groups.set(key, { unavailable: `Scoring failed: ${error instanceof Error ? error.message : String(error)}` });
    }
  }

}
