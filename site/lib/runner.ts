/**
 * Drives one run from this tab (a loop on the page, or one in the model's worker). The loop
 * advances only as its events are taken, so pausing is simply not taking the next one: the model
 * finishes the group it is writing and the loop waits there. Cancelling aborts the run's signal;
 * the store keeps it resumable from its first unfinished item.
 */
export interface RunnerHandlers<E> {
  onEvent(event: E): Promise<void> | void;
}

export class Runner {
  readonly controller = new AbortController();
  #gate: { promise: Promise<void>; open: () => void } | null = null;

  get paused(): boolean {
    return this.#gate !== null;
  }

  /** Consumes the run's events until it ends; rejects when the run fails. */
  async drive<E>(run: AsyncIterable<E>, handlers: RunnerHandlers<E>): Promise<void> {
    for await (const event of run) {
      await handlers.onEvent(event);
      while (this.#gate) await this.#gate.promise;
    }
  }

  pause(): void {
    if (this.#gate || this.controller.signal.aborted) return;
    let open = () => {};
    const promise = new Promise<void>((resolve) => (open = resolve));
    this.#gate = { promise, open };
  }

  resume(): void {
    const gate = this.#gate;
    this.#gate = null;
    gate?.open();
  }

  cancel(): void {
    this.controller.abort();
    this.resume();
  }
}
