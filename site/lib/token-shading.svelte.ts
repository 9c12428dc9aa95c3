/**
 * The token-shaded text of each group: decoded when a group is sampled here (and kept in the view
 * store, so a reload still shades it without a model), read back from there, or, for runs trained
 * elsewhere, decoded once the model that wrote them is loaded. A card reads `of` in a `$derived`
 * and awaits it in its markup: reading starts no state change, it hands out the pieces or the one
 * promise of them, kept per group, so the card shows them once they arrive.
 */
import { SvelteMap } from 'svelte/reactivity';
import type { ItemResult, Policy } from '../../lib/index.js';
import { plainPieces, tokenPieces, type TokenPiece } from './tokens.js';
import type { ViewStore } from './view-store.js';

type Completions = ReadonlyArray<{ tokenIds: number[]; logprobs: number[]; text: string }>;
type Pieces = TokenPiece[][];

const keyOf = (runId: string, step: number, item: number) => `${runId}:${step}:${item}`;

export class TokenShading {
  /** Groups decoded as they were sampled here (`record`, from the run's events). */
  readonly #recorded = new SvelteMap<string, Pieces>();
  /** Reads of stored groups, once each, with or without the run's model to decode them. */
  readonly #reads = new Map<string, Promise<Pieces | undefined>>();
  /** What the reads found: kept whichever model is loaded later. */
  readonly #found = new Map<string, Pieces>();
  readonly #policy: () => Policy | null;
  readonly #views: () => ViewStore | null;

  /** `policy`: the loaded model (decodes token ids); `views`: where pieces are kept across reloads. */
  constructor(policy: () => Policy | null, views: () => ViewStore | null) {
    this.#policy = policy;
    this.#views = views;
  }

  /**
   * The pieces of a group of a run of `model`: those recorded here, or the promise of those in the
   * view store, else decoded by the loaded model when it is `model` (undefined when neither). Read
   * again when another model is loaded, so a run trained elsewhere is shaded once its model is.
   */
  of(runId: string, result: ItemResult, model: string): Pieces | Promise<Pieces | undefined> {
    const key = keyOf(runId, result.step, result.index);
    const recorded = this.#recorded.get(key);
    if (recorded) return recorded;
    const found = this.#found.get(key);
    if (found) return found;
    const policy = this.#policy();
    const decoder = policy?.decode && policy.info.model === model ? policy : null;
    const readKey = `${key}:${decoder ? 'decode' : 'stored'}`;
    let read = this.#reads.get(readKey);
    if (!read) {
      read = this.#read(runId, result, decoder).then((pieces) => {
        if (pieces) this.#found.set(key, pieces);
        return pieces;
      });
      this.#reads.set(readKey, read);
    }
    return read;
  }

  /** Decodes a fresh group with the loaded model and keeps its pieces (after a reload too). */
  async record(runId: string, step: number, item: number, completions: Completions): Promise<void> {
    const policy = this.#policy();
    const pieces = policy ? await this.#decode(policy, completions) : undefined;
    if (!pieces) return;
    this.#recorded.set(keyOf(runId, step, item), pieces);
    await this.#views()?.putPieces(runId, step, item, pieces).catch(() => undefined);
  }

  async #read(runId: string, result: ItemResult, decoder: Policy | null): Promise<Pieces | undefined> {
    const stored = await this.#views()?.getPieces(runId, result.step, result.index).catch(() => undefined);
    if (stored || !decoder) return stored;
    // A group that cannot be decoded is shown as plain text, as before its model was loaded.
    const pieces = await this.#decode(decoder, result.rollouts).catch(() => undefined);
    if (pieces) await this.#views()?.putPieces(runId, result.step, result.index, pieces).catch(() => undefined);
    return pieces;
  }

  /** Each completion's pieces, or undefined where the model cannot decode or a completion has no log-probs to shade by. */
  async #decode(policy: Policy, completions: Completions): Promise<Pieces | undefined> {
    if (!policy.decode || completions.some((c) => c.tokenIds.length !== c.logprobs.length)) return undefined;
    const decode = (ids: number[]) => policy.decode!(ids);
    return Promise.all(completions.map((c) => (c.tokenIds.length ? tokenPieces(decode, c.tokenIds, c.logprobs) : plainPieces(c.text))));
  }
}
