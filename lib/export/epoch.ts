/**
 * Export after every epoch (training data written out after each episode, as training goes on): a
 * hook the driver calls with the groups an epoch produced, appending their lines to a sink: a file
 * in Node (`openEpochExport` / `jsonlFileSink` from `webgrpo/node`), or anything with `write`.
 *
 * Exports are at least once and idempotent: a process can die between an epoch's last commit and
 * its append, so a resume writes the epochs the store finished (`finishedEpochs`) again, and lines
 * whose completion id was written already are skipped (`written`).
 */
import type { EpochExport, EpochHook, ExportGroup } from '../run/groups.js';
import type { Store } from '../store/store.js';
import { toJsonl, type ToJsonlOptions } from './jsonl.js';
import { renderPrompts, type PromptRenderer } from './prompts.js';
import { runGroups } from './run.js';

export interface JsonlSink {
  /** Appends text (whole lines) to the destination. */
  write(text: string): Promise<void>;
}

export interface EpochExportOptions extends ToJsonlOptions {
  /**
   * Completion ids already in the destination: their lines are not written again, and every line
   * written is added. Completions without an id are always written.
   */
  written?: Set<string>;
  /** The standard format's chat prompts: rendered through this model's chat template (`renderPrompts`). */
  render?: PromptRenderer;
}

/**
 * A hook for the loop's `onEpoch` that appends each epoch's groups to `sink` as JSONL; pass the
 * same `written` set across a resume so no completion is written twice.
 */
export function exportEveryEpoch(sink: JsonlSink, options: EpochExportOptions = {}): EpochHook {
  const { written, render, ...format } = options;
  return async ({ groups }) => {
    const unseen = written ? unwritten(groups, written) : groups;
    const fresh = render && format.format === 'standard' ? await renderPrompts(unseen, render) : unseen;
    const text = toJsonl(fresh, format);
    if (!text) return;
    await sink.write(text);
    // Marked only once on disk: a failed write is retried by the next export of the epoch.
    for (const group of fresh) for (const c of group.completions) if (c.id !== undefined) written?.add(c.id);
  };
}

/** The groups with only the completions not yet written (groups left empty dropped). */
function unwritten(groups: readonly ExportGroup[], written: ReadonlySet<string>): ExportGroup[] {
  return groups.flatMap((group) => {
    const completions = group.completions.filter((c) => c.id === undefined || !written.has(c.id));
    return completions.length ? [{ ...group, completions }] : [];
  });
}

/**
 * Every epoch of a stored run whose steps are all committed, with its groups as the loop's
 * `onEpoch` gets them (router groups split per arm, as `runGroups` exports them).
 */
export async function finishedEpochs(store: Store, runId: string): Promise<EpochExport[]> {
  const bundle = await store.readBundle(runId);
  const { epochs, batchSize } = bundle.run.config;
  const perEpoch = Math.ceil(bundle.run.itemCount / batchSize);
  const finished = Math.min(epochs, Math.floor(bundle.steps.length / perEpoch));
  return Array.from({ length: finished }, (_, e) => ({
    epoch: e + 1,
    groups: runGroups({ ...bundle, steps: bundle.steps.filter((s) => s.epoch === e + 1), pending: [] }),
  }));
}
