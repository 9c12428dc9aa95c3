/** What a killed-and-resumed run is compared with (the crash matrices, LoRA in Chromium): the uninterrupted run's records, and no temporary leftovers. */
import { readdir } from 'node:fs/promises';

/** The parts of a RunBundle compared: a store's, or one a browser page handed back as JSON. */
export interface ComparedBundle {
  run: { status: string };
  items: unknown;
  steps: ReadonlyArray<{ committedAt: string; payload: object }>;
  pending: unknown;
  adapter?: unknown;
}

/** What must match an uninterrupted run: every step but its timings (commit time, a lora step's refresh), the checkpoint, the end. */
export function comparable(bundle: ComparedBundle) {
  return {
    status: bundle.run.status,
    items: bundle.items,
    steps: bundle.steps.map(({ committedAt: _t, payload, ...step }) => ({ ...step, payload: { ...payload, refreshMs: undefined } })),
    pending: bundle.pending,
    // The checkpoint as saved, but for the time it was written.
    adapter: bundle.adapter ? JSON.parse(JSON.stringify(bundle.adapter, (key, value: unknown) => (key === 'createdAt' ? undefined : value))) : null,
  };
}

/** Temporary files and folders a kill left. (A dead process's lock stays: the next lockRun takes it over.) */
export async function leftovers(root: string): Promise<string[]> {
  const names = await readdir(root, { recursive: true });
  return names.filter((name) => /\.tmp$|(^|\/)\.new-|(^|\/)\.trash-/.test(name));
}
