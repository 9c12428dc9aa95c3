/**
 * The token-shaded text of each group: decoded when a group is sampled here (and kept in the view
 * store, so a reload still shades it without a model), read back from there, or, for runs trained
 * elsewhere, decoded once the model that wrote them is loaded. Components read `of`; reading is
 * reactive, so a group's card re-renders when its pieces arrive.
 */
import { SvelteMap } from 'svelte/reactivity';
import type { ItemResult, Policy } from '../../lib/index.js';
import { plainPieces, tokenPieces, type TokenPiece } from './tokens.js';
import type { ViewStore } from './view-store.js';

type Completions = ReadonlyArray<{ tokenIds: number[]; logprobs: number[]; text: string }>;

const keyOf = (runId: string, step: number, item: number) => `${runId}:${step}:${item}`;

export class TokenShading {
  readonly #groups = new SvelteMap<string, TokenPiece[][]>();
  readonly #policy: () => Policy | null;
  readonly #views: () => ViewStore | null;

  /** `policy`: the loaded model (decodes token ids); `views`: where pieces are kept across reloads. */
  constructor(policy: () => Policy | null, views: () => ViewStore | null) {
    this.#policy = policy;
    this.#views = views;
  }

  of(runId: string, result: ItemResult): TokenPiece[][] | undefined {
    return this.#groups.get(keyOf(runId, result.step, result.index));
  }

  /** Decodes a fresh group with the loaded model and keeps its pieces (after a reload too). */
  async record(runId: string, step: number, item: number, completions: Completions): Promise<void> {
    const policy = this.#policy();
    if (!policy?.decode || completions.some((c) => c.tokenIds.length !== c.logprobs.length)) return;
    const decode = (ids: number[]) => policy.decode!(ids);
    const pieces = await Promise.all(completions.map((c) => (c.tokenIds.length ? tokenPieces(decode, c.tokenIds, c.logprobs) : plainPieces(c.text))));
    this.#groups.set(keyOf(runId, step, item), pieces);
    await this.#views()?.putPieces(runId, step, item, pieces).catch(() => undefined);
  }

  /** The pieces of a stored group: kept here, in the view store, or decoded now when `model` (the run's) is loaded. */
  async ensure(runId: string, result: ItemResult, model: string | undefined): Promise<void> {
    if (this.#groups.has(keyOf(runId, result.step, result.index))) return;
    const stored = await this.#views()?.getPieces(runId, result.step, result.index).catch(() => undefined);
    if (stored) {
      this.#groups.set(keyOf(runId, result.step, result.index), stored);
      return;
    }
    const policy = this.#policy();
    if (policy?.decode && model && policy.info.model === model) await this.record(runId, result.step, result.index, result.rollouts);
  }
}
