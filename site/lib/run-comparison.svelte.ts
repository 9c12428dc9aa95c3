/**
 * The runs ticked for comparison, in the order they were ticked, and their bundles while the
 * comparison is in view (compare.ts draws them).
 */
import type { RunBundle, Store } from '../../lib/index.js';

export class RunComparison {
  ids = $state<string[]>([]);
  bundles = $state.raw<RunBundle[] | null>(null);

  toggle(runId: string): void {
    this.ids = this.ids.includes(runId) ? this.ids.filter((id) => id !== runId) : [...this.ids, runId];
  }

  /** Reads the ticked runs and shows them side by side (runs deleted meanwhile are left out). */
  async open(store: Store): Promise<void> {
    if (this.ids.length < 2) return;
    const bundles = await Promise.all(this.ids.map((id) => store.readBundle(id).catch(() => null)));
    this.bundles = bundles.filter((b): b is RunBundle => b !== null);
  }

  close(): void {
    this.bundles = null;
  }

  /** A run that is no longer stored. */
  forget(runId: string): void {
    this.ids = this.ids.filter((id) => id !== runId);
  }
}
