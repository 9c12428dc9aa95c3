/**
 * How the groups of the run in view are drawn: their token-shaded text and what its tokens are
 * shaded by, the scored views, and the exact text each prompt was, as the loaded model reads them.
 */
import type { Policy } from '../../lib/index.js';
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

  /** `policy`: the loaded model; `views`: where pieces are kept across reloads. */
  constructor(policy: () => Policy | null, views: () => ViewStore | null) {
    this.pieces = new TokenShading(policy, views);
    this.scored = new ScoredTokenViews(policy);
    this.prompts = new RenderedPrompts(policy);
  }
}
