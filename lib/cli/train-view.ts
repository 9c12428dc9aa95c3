/** The terminal view of `webgrpo train`: a progress bar, an epoch table, warnings, the library. */
import type { ExperienceLibrary } from '../experience/types.js';
import type { GradientEpochStats, GradientEvent } from '../methods/gradient/events.js';
import type { RouterEvent } from '../methods/router/events.js';
import type { TrainingFreeEvent } from '../methods/training-free/events.js';
import type { Progress as ProgressCounts } from '../run/events.js';

/** The events of any built-in method's run. */
export type CliEvent = TrainingFreeEvent | GradientEvent | RouterEvent;

/** Where the view writes; `interactive`: a terminal (a redrawn bar) rather than a log (a line per step). */
export interface ViewIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  interactive: boolean;
}

/** Model text is untrusted: no terminal control sequences reach the screen. */
function printable(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '·');
}

function oneLine(text: string, max = 110): string {
  const line = printable(text).replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

function fixed(value: number | null, digits = 3): string {
  return value === null ? '-' : value.toFixed(digits);
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 3600 ? `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m` : s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

/** Draws a run from its events. */
export class Progress {
  readonly #io: ViewIo;
  readonly #quiet: boolean;
  readonly #started = Date.now();
  #doneAtStart = 0;
  #bar = '';
  #epochs: Array<Extract<CliEvent, { type: 'epoch-end' }>['stats']> = [];
  #warnings = 0;
  /** The last step's sampler-to-trainer log-prob drift (its first update's), shown with the step. */
  #drift: { mean: number; max: number } | undefined;
  #library: ExperienceLibrary | undefined;

  constructor(io: ViewIo, quiet: boolean) {
    this.#io = io;
    this.#quiet = quiet;
  }

  on(event: CliEvent): void {
    switch (event.type) {
      case 'run-start':
        this.#doneAtStart = event.progress.itemsDone;
        if ('library' in event) this.#library = event.library;
        break;
      case 'item-end': {
        if (event.reused) this.#doneAtStart += 1;
        if (this.#io.interactive) this.#draw(this.#status(event.progress));
        break;
      }
      case 'step-end':
        if ('training' in event) this.#drift = event.training[0]?.logprobDrift ?? this.#drift;
        // A log gets one line per step instead of a redrawn bar.
        if (!this.#io.interactive && !this.#quiet) this.#io.stderr(`${this.#status(event.progress)}\n`);
        break;
      case 'warning':
        this.#warnings += 1;
        this.#print(`warning (step ${event.warning.step}${event.warning.item !== undefined ? `, item ${event.warning.item}` : ''}, ${event.warning.stage}): ${oneLine(event.warning.message, 160)}`);
        break;
      case 'epoch-end':
        this.#epochs.push(event.stats);
        this.#print(this.#epochTable(this.#epochs.length === 1));
        break;
      case 'run-end':
        if ('library' in event) this.#library = event.library;
        break;
      default:
        break;
    }
  }

  finish(): void {
    this.#clear();
    const library = this.#library;
    if (!library) return;
    const out: string[] = ['', `Experience library (${library.entries.length} lessons, ${library.exemplars.length} exemplars):`];
    for (const e of library.entries) out.push(`  [${e.id}] ${oneLine(e.text)}`);
    for (const e of library.exemplars) out.push(`  [${e.id}] score ${e.score.toFixed(3)} · task: ${oneLine(e.item, 50)} · answer: ${oneLine(e.output, 50)}`);
    if (library.entries.length + library.exemplars.length === 0) out.push('  (empty)');
    this.#io.stdout(`${out.join('\n')}\n`);
    if (this.#warnings > 0) {
      this.#io.stderr(`${this.#warnings} warning(s): critic replies that could not be used were skipped (listed above; kept with the run).\n`);
    }
  }

  #status(p: ProgressCounts): string {
    const fresh = p.itemsDone - this.#doneAtStart;
    const eta = fresh > 0 ? ((Date.now() - this.#started) / fresh) * (p.totalItems - p.itemsDone) : undefined;
    const width = 24;
    const filled = Math.round((p.itemsDone / p.totalItems) * width);
    return (
      `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${p.itemsDone}/${p.totalItems} items · epoch ${p.epoch}/${p.epochs} · step ${p.step}/${p.totalSteps}` +
      (this.#drift ? ` · logp drift ${this.#drift.mean.toExponential(1)} (max ${this.#drift.max.toExponential(1)})` : '') +
      (eta !== undefined ? ` · ETA ${duration(eta)}` : '')
    );
  }

  #epochTable(withHeader: boolean): string {
    const e = this.#epochs.at(-1)!;
    const common = [String(e.epoch), fixed(e.meanReward), fixed(e.stdReward), `${Math.round((e.groups ? e.zeroSpreadGroups / e.groups : 0) * 100)}%`];
    // Each method's epoch statistics add their own columns: the library's, or the last update's.
    const [header, row] =
      'librarySize' in e
        ? [['library', 'ops', 'warnings'], [String(e.librarySize), `+${e.operations.added} ~${e.operations.updated} -${e.operations.deleted}`, String(e.warnings)]]
        : 'loss' in e
          ? [['loss', 'kl', 'grad norm'], [fixed((e as GradientEpochStats).loss, 4), fixed(e.kl, 4), fixed(e.gradNorm, 3)]]
          : [[], []];
    const text = table(['epoch', 'mean reward', 'std', 'zero-spread', ...header], [[...common, ...row]]);
    return withHeader ? text.trimEnd() : (text.split('\n')[1] ?? '');
  }

  #draw(text: string): void {
    if (this.#quiet) return;
    this.#bar = text;
    this.#io.stderr(`\r${text}\u001b[K`);
  }

  #clear(): void {
    if (this.#io.interactive && this.#bar) this.#io.stderr('\r\u001b[K');
    this.#bar = '';
  }

  #print(line: string): void {
    this.#clear();
    this.#io.stderr(`${line}\n`);
  }
}
