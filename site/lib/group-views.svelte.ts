/**
 * How the groups of the run in view are drawn: their token-shaded text and what its tokens are
 * shaded by, the scored views, and the exact text each prompt was, as the loaded model reads them.
 */
import type { ItemResult, Policy, RunRecord } from '../../lib/index.js';
import { RenderedPrompts } from './rendered-prompts.svelte.js';
import { ScoredTokenViews } from './scored-views.svelte.js';
import { TokenShading } from './token-shading.svelte.js';
import type { TokenView } from './token-views.js';
import type { ViewStore } from './view-store.js';

export class GroupViews {
  /** The token-shaded text of the groups in view. */
  readonly pieces: TokenShading;
  /** What the tokens are shaded by. */
  tokenView = $state<TokenView>('probability');
  readonly scored: ScoredTokenViews;
  /** The exact text each group's prompt was, as the run's model read it. */
  readonly prompts: RenderedPrompts;
  readonly #run: () => RunRecord | undefined;

  /** `run`: the run in view. */
  constructor(policy: () => Policy | null, views: () => ViewStore | null, run: () => RunRecord | undefined) {
    this.pieces = new TokenShading(policy, views);
    this.scored = new ScoredTokenViews(policy);
    this.prompts = new RenderedPrompts(policy);
    this.#run = run;
  }

  /** The scored token views of a stored group of the run in view (see ScoredTokenViews.ensure). */
  ensureScored(runId: string, result: ItemResult): Promise<void> {
    const run = this.#run();
    return run?.id === runId ? this.scored.ensure(run, result) : Promise.resolve();
  }

  /** The pieces of a stored group of the run in view (see TokenShading.ensure). */
  ensurePieces(runId: string, result: ItemResult): Promise<void> {
    return this.pieces.ensure(runId, result, this.#run()?.config.policy.model);
  }
}
