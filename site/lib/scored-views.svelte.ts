/**
 * The scored token views of the groups in view (token-views.ts): the loaded model scores a group's
 * completions again, once, when a view that needs it is picked. Only the model that wrote the run
 * can score it; otherwise `of` says why there is nothing to show. A card reads `of` in a `$derived`
 * and awaits it in its markup: reading changes no state.
 */
import type { ItemResult, Policy, RunRecord } from '../../lib/index.js';
import type { GrpoLossConfig } from '../../lib/math.js';
import { kindView } from './kind-view.js';
import { scoredViews, type ScoredViews } from './token-views.js';

export type Scored = ScoredViews | { unavailable: string };

const keyOf = (runId: string, result: ItemResult) => `${runId}:${result.step}:${result.index}`;

export class ScoredTokenViews {
  /** The scorings of each loaded model, once per group: another model's are its own. */
  readonly #byModel = new WeakMap<Policy, Map<string, Promise<Scored>>>();
  readonly #policy: () => Policy | null;

  constructor(policy: () => Policy | null) {
    this.#policy = policy;
  }

  /** A stored group's views as the loaded model scores them (the promise of them), or why there are none. */
  of(run: RunRecord, result: ItemResult): Scored | Promise<Scored> {
    const policy = this.#policy();
    if (!policy) return { unavailable: 'Load the model this run used: the view scores its completions again.' };
    const why = !policy.scoreCompletions
      ? 'This model cannot score given completions (hosted APIs rarely can).'
      : policy.info.model !== run.config.policy.model
        ? 'The model loaded is not the one this run used.'
        : (kindView(run).unscorable ??
          (result.rollouts.some((r) => r.tokenIds.length !== r.logprobs.length || r.tokenIds.length === 0)
            ? 'This group has no token log-probs to compare with.'
            : null));
    if (why) return { unavailable: why };
    let scorings = this.#byModel.get(policy);
    if (!scorings) this.#byModel.set(policy, (scorings = new Map()));
    const key = keyOf(run.id, result);
    let scoring = scorings.get(key);
    if (!scoring) scorings.set(key, (scoring = score(policy, run, result)));
    return scoring;
  }
}

async function score(policy: Policy, run: RunRecord, result: ItemResult): Promise<Scored> {
  try {
    const scored = await policy.scoreCompletions!({ ...result.prompt, completions: result.rollouts.map((r) => r.tokenIds), temperature: run.config.temperature });
    const loss: GrpoLossConfig = kindView(run).loss(run);
    return scoredViews(result.rollouts, scored, loss);
  } catch (error) {
    return { unavailable: `Scoring failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}
