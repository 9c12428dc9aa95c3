/** The stored runs the list shows, and those that cannot be read whole. */
import type { RunRecord, Store } from '../../lib/index.js';

export class RunList {
  runs = $state.raw<RunRecord[]>([]);
  /** Stored runs that cannot be read whole, and what is wrong: listed as damaged, never resumed, repaired or deleted here. */
  damaged = $state.raw<Array<{ runId: string; message: string }>>([]);

  async refresh(store: Store): Promise<void> {
    const [runs, damaged] = await Promise.all([store.listRuns(), store.listDamaged()]);
    this.runs = runs;
    this.damaged = damaged.map(({ runId, error }) => ({ runId, message: error.message }));
  }
}
