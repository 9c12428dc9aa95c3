/**
 * Time left in a run, from the pace of the items finished while it was running in this tab.
 * Paused time does not count, and items a resumed run found already done do not either.
 */
export class EtaClock {
  #activeMs = 0;
  #since: number | null = null;
  #firstDone: number | null = null;
  #done = 0;

  /** The run is going (again) at `now`, with `done` items finished so far. */
  start(done: number, now: number): void {
    this.#firstDone ??= done;
    this.#done = done;
    this.#since ??= now;
  }

  pause(now: number): void {
    if (this.#since !== null) this.#activeMs += now - this.#since;
    this.#since = null;
  }

  /** Items finished so far (over the whole run). */
  update(done: number): void {
    this.#done = done;
  }

  /** Milliseconds left for `total` items, or null until one item has finished here. */
  remainingMs(total: number, now: number): number | null {
    const doneHere = this.#done - (this.#firstDone ?? this.#done);
    if (doneHere <= 0) return null;
    const active = this.#activeMs + (this.#since !== null ? now - this.#since : 0);
    return (active / doneHere) * Math.max(0, total - this.#done);
  }
}

/** "45 s", "3 min 20 s", "1 h 05 min". */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}
