/**
 * Time left in a run, from its own steps and held-out evaluations measured while it ran in this
 * tab. A step's time is from its step-start to its step-end; an evaluation's from the event before
 * it (the run's start, or the last step of an epoch) to its result. Items are no measure: the first
 * item of a run waits for the base model's held-out answers and the engine's first load, which is
 * what made an item-paced estimate say "4 min 24 s left" 16 s into a 41 s run. Paused time does
 * not count; steps a resumed run found done do not either.
 */
export class EtaClock {
  #activeMs = 0;
  #since: number | null = null;
  /** Active time at the current step's start, or at the event an evaluation follows. */
  #stepStartedAt: number | null = null;
  #evalFrom: number | null = null;
  readonly #steps: number[] = [];
  readonly #evals: number[] = [];

  /** Milliseconds the run has been going here, pauses left out. */
  #active(now: number): number {
    return this.#activeMs + (this.#since !== null ? now - this.#since : 0);
  }

  /** The run is going (again) at `now`. At its start, the base model's evaluation may follow. */
  start(now: number): void {
    this.#since ??= now;
    this.#evalFrom ??= this.#active(now);
  }

  pause(now: number): void {
    if (this.#since !== null) this.#activeMs += now - this.#since;
    this.#since = null;
  }

  stepStart(now: number): void {
    this.#stepStartedAt = this.#active(now);
    this.#evalFrom = null;
  }

  /** A step committed; `epochEnds`: it was its epoch's last, so a held-out evaluation may follow. */
  stepEnd(now: number, epochEnds: boolean): void {
    const at = this.#active(now);
    if (this.#stepStartedAt !== null) this.#steps.push(at - this.#stepStartedAt);
    this.#stepStartedAt = null;
    this.#evalFrom = epochEnds ? at : null;
  }

  evaluated(now: number): void {
    if (this.#evalFrom !== null) this.#evals.push(this.#active(now) - this.#evalFrom);
    this.#evalFrom = null;
  }

  /** The mean step measured here: past the first where there are more (it also loads the engine). */
  stepMs(): number | null {
    const steps = this.#steps.length > 1 ? this.#steps.slice(1) : this.#steps;
    return steps.length ? steps.reduce((a, b) => a + b, 0) / steps.length : null;
  }

  /**
   * Milliseconds left with `stepsLeft` steps not yet finished (the one in progress among them) and
   * `evalsLeft` evaluations to come, or null until a step has finished here.
   */
  remainingMs(stepsLeft: number, evalsLeft: number, now: number): number | null {
    const step = this.stepMs();
    if (step === null) return null;
    const inStep = this.#stepStartedAt !== null ? Math.min(step, this.#active(now) - this.#stepStartedAt) : 0;
    const evaluation = this.#evals.length ? this.#evals.reduce((a, b) => a + b, 0) / this.#evals.length : 0;
    return Math.max(0, stepsLeft * step - inStep + evalsLeft * evaluation);
  }
}

/** What a run's time left reads of its events. */
export interface EtaEvent {
  type: string;
  step?: number;
  epoch?: number;
  progress?: { step: number; totalSteps: number; epochs: number };
}

/**
 * A live run's time left, fed its events in order: its steps committed, the last epoch it was
 * evaluated after, and the clock of its steps and evaluations.
 */
export class RunEta {
  readonly #clock = new EtaClock();
  #stepsEnded = 0;
  #evaluated = -1;
  #totalSteps = 0;
  #epochs = 0;

  observe(event: EtaEvent, now: number): void {
    if (event.progress) {
      this.#totalSteps = event.progress.totalSteps;
      this.#epochs = event.progress.epochs;
    }
    if (event.type === 'run-start') {
      this.#clock.start(now);
      this.#stepsEnded = (event.progress?.step ?? 1) - 1;
    } else if (event.type === 'step-start') {
      this.#clock.stepStart(now);
    } else if (event.type === 'step-end' && event.step !== undefined) {
      this.#stepsEnded = event.step;
      const perEpoch = this.#epochs > 0 ? this.#totalSteps / this.#epochs : 0;
      this.#clock.stepEnd(now, perEpoch > 0 && event.step % perEpoch === 0);
    } else if (event.type === 'eval' && event.epoch !== undefined) {
      this.#clock.evaluated(now);
      this.#evaluated = Math.max(this.#evaluated, event.epoch);
    }
  }

  /** The epochs a resumed run was already evaluated after. */
  evaluatedBefore(epochs: readonly number[]): void {
    this.#evaluated = Math.max(this.#evaluated, ...epochs);
  }

  pause(now: number): void {
    this.#clock.pause(now);
  }

  resume(now: number): void {
    this.#clock.start(now);
  }

  /** Milliseconds left, or null until a step has finished here; `every`: the run's evaluation schedule (none: not evaluated). */
  remainingMs(every: number | undefined, now: number): number | null {
    const evalsLeft = every === undefined ? 0 : evaluationsDue(every, this.#evaluated, this.#epochs);
    return this.#clock.remainingMs(Math.max(0, this.#totalSteps - this.#stepsEnded), evalsLeft, now);
  }
}

/**
 * Held-out evaluations still to come in a run of `epochs` evaluated every `every` epochs (and
 * before the first and after the last, as the loop does), the last one done after epoch `done` (-1: none).
 */
export function evaluationsDue(every: number, done: number, epochs: number): number {
  let due = 0;
  for (let epoch = done + 1; epoch <= epochs; epoch++) if (epoch === 0 || epoch === epochs || epoch % every === 0) due++;
  return due;
}

/** "45 s", "3 min 20 s", "1 h 05 min". */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}
