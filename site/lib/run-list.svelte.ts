/** The stored runs the list shows, and those that cannot be read whole. */
import type { RunRecord, Store } from '../../lib/index.js';

export class RunList {
  runs = $state.raw<RunRecord[]>([]);
  /**
   * Stored runs that cannot be read whole, and what is wrong: listed as damaged, never resumed,
   * repaired or deleted here. `unverified`: the damage is a record without checksums (a run stored
   * before webgrpo wrote them), which the user may seal on their word (`sealUnverifiedIdb`).
   */
  damaged = $state.raw<Array<{ runId: string; message: string; unverified: boolean }>>([]);

  async refresh(store: Store): Promise<void> {
    const [runs, damaged] = await Promise.all([store.listRuns(), store.listDamaged()]);
    this.runs = runs;
    this.damaged = damaged.map(({ runId, error }) => ({ runId, message: error.message, unverified: error.field?.endsWith('integrity') === true }));
  }
}
