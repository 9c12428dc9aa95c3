/**
 * The run looping in this tab, as its header and step view show it: its progress and stage, the
 * time left, the group being written, and Pause, Resume and Cancel.
 */
import type { RunRecord } from '../../lib/index.js';
import { RunEta } from './eta.js';
import { stageAfter } from './live-stage.js';
import type { PlaygroundEvent } from './methods.js';
import type { Runner } from './runner.js';
import type { GroupStream } from './streaming.js';

export interface LiveRun {
  runId: string;
  paused: boolean;
  /** What the loop is doing, in words. */
  stage: string;
  itemsDone: number;
  totalItems: number;
  step: number;
  totalSteps: number;
  epoch: number;
  epochs: number;
  etaMs: number | null;
  warnings: number;
}

export class LiveRunView {
  /** The run looping here, or null. */
  run = $state<LiveRun | null>(null);
  /** The group or critic reply being written, and the prompt it is for. */
  stream = $state.raw<(GroupStream & { item: number }) | null>(null);
  #streamItem = 0;
  #runner: Runner | null = null;
  #eta = new RunEta();

  /** Where the policy reports the group it is writing. */
  readonly onStream = (stream: GroupStream | null): void => {
    this.stream = stream ? { ...stream, item: this.#streamItem } : null;
  };

  begin(runId: string, runner: Runner): void {
    this.#runner = runner;
    this.#eta = new RunEta();
    this.run = { runId, paused: false, stage: 'Starting…', itemsDone: 0, totalItems: 0, step: 0, totalSteps: 0, epoch: 0, epochs: 0, etaMs: null, warnings: 0 };
  }

  /** The loop has stopped (the run stays shown live until `end`). */
  stopped(): void {
    this.#runner = null;
    this.stream = null;
  }

  end(): void {
    this.run = null;
  }

  /** Takes in an event of the run: its progress, stage and the time it says is left (`run` is the stored record in view, when it is this run's). */
  observe(event: PlaygroundEvent, run: RunRecord | undefined, now: number): void {
    const live = this.run;
    if (!live) return;
    if ('progress' in event) {
      const p = event.progress;
      Object.assign(live, { itemsDone: p.itemsDone, totalItems: p.totalItems, step: p.step, totalSteps: p.totalSteps, epoch: p.epoch, epochs: p.epochs });
    }
    live.stage = stageAfter(event, run) ?? live.stage;
    this.#eta.observe(event, now);
    if (event.type === 'item-start') this.#streamItem = event.item;
    if (event.type === 'warning') live.warnings += 1;
  }

  /** The epochs a resumed run was already evaluated after (no time is kept for them). */
  evaluatedBefore(epochs: readonly number[]): void {
    this.#eta.evaluatedBefore(epochs);
  }

  /** The time left, from the steps so far and the held-out evaluations still to come (every `every` epochs). */
  updateEta(every: number | undefined, now: number): void {
    if (this.run) this.run.etaMs = this.#eta.remainingMs(every, now);
  }

  pause(): void {
    this.#runner?.pause();
    this.#eta.pause(performance.now());
    if (this.run) this.run.paused = true;
  }

  resume(): void {
    if (!this.run) return;
    this.#eta.resume(performance.now());
    this.run.paused = false;
    this.#runner?.resume();
  }

  cancel(): void {
    if (this.run) this.run.stage = 'Cancelling after the current group…';
    this.#runner?.cancel();
  }
}
