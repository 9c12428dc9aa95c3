/**
 * An in-memory `Store`: the default for loops given no store, and the reference the other stores
 * are tested against. Values are cloned in and out, so it behaves like a persistent store.
 */
import { NotFoundError } from '../../errors.js';
import type { EvaluationRecord, ItemResult, RunBundle, RunRecord, StepExtras, StepRecord, StoredCheckpoint } from '../records/index.js';
import type { DatasetItem } from '../../core/dataset.js';
import { alreadyRunning, bundleExists, byRecentUpdate, checkNextStep, holdRun, runExists, withEvaluation, withStatus } from '../rules.js';
import type { DamagedRun, RunLock, RunStatusPatch, StepRange, Store } from '../store.js';

interface RunData {
  run: RunRecord;
  items: DatasetItem[];
  steps: StepRecord[];
  pending: Map<string, ItemResult>;
  adapter?: StoredCheckpoint;
}

const clone = <T>(value: T): T => structuredClone(value);

/** A `Store` held in this process's memory (a `Map` of structured clones): for tests, scripts and runs nobody resumes; nothing outlives the process. */
export class MemoryStore implements Store {
  readonly kind = 'memory';
  readonly #runs = new Map<string, RunData>();
  readonly #locks = new Set<string>();

  async createRun(run: RunRecord, items: DatasetItem[]): Promise<void> {
    if (this.#runs.has(run.id)) throw runExists(run.id);
    this.#runs.set(run.id, { run: clone(run), items: clone(items), steps: [], pending: new Map() });
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const data = this.#runs.get(runId);
    return data && clone(data.run);
  }

  async listRuns(): Promise<RunRecord[]> {
    return [...this.#runs.values()].map((d) => clone(d.run)).sort(byRecentUpdate);
  }

  /** None: what a memory store holds is only ever changed through its own methods. */
  async listDamaged(): Promise<DamagedRun[]> {
    return [];
  }

  async setRunStatus(runId: string, patch: RunStatusPatch): Promise<void> {
    const data = this.#data(runId);
    data.run = withStatus(data.run, patch);
  }

  async putEvaluation(runId: string, evaluation: EvaluationRecord): Promise<void> {
    const data = this.#data(runId);
    data.run = withEvaluation(data.run, clone(evaluation));
  }

  async deleteRun(runId: string): Promise<void> {
    this.#runs.delete(runId);
  }

  async getItems(runId: string): Promise<DatasetItem[]> {
    return clone(this.#data(runId).items);
  }

  async putItemResult(runId: string, result: ItemResult): Promise<void> {
    this.#data(runId).pending.set(`${result.step}:${result.position}`, clone(result));
  }

  async getItemResults(runId: string, step: number): Promise<ItemResult[]> {
    const results = [...this.#data(runId).pending.values()].filter((r) => r.step === step);
    return clone(results.sort((a, b) => a.position - b.position));
  }

  async commitStep(runId: string, step: StepRecord, extras: StepExtras = {}): Promise<void> {
    const data = this.#data(runId);
    checkNextStep(runId, data.steps.length, step.step);
    data.steps.push(clone(step));
    if (extras.adapter) data.adapter = clone(extras.adapter);
    for (const [key, result] of data.pending) if (result.step <= step.step) data.pending.delete(key);
    data.run = { ...data.run, updatedAt: step.committedAt };
  }

  async getStep(runId: string, step: number): Promise<StepRecord | undefined> {
    const record = this.#data(runId).steps[step - 1];
    return record && clone(record);
  }

  async listSteps(runId: string, range: StepRange = {}): Promise<StepRecord[]> {
    const from = Math.max(1, range.from ?? 1);
    const to = range.to ?? Infinity;
    return clone(this.#data(runId).steps.filter((s) => s.step >= from && s.step <= to));
  }

  async lastStep(runId: string): Promise<StepRecord | undefined> {
    const steps = this.#data(runId).steps;
    return steps.length ? clone(steps[steps.length - 1]) : undefined;
  }

  async getAdapter(runId: string): Promise<StoredCheckpoint | undefined> {
    const adapter = this.#data(runId).adapter;
    return adapter && clone(adapter);
  }

  async lockRun(runId: string): Promise<RunLock> {
    this.#data(runId);
    return holdRun(this.#locks, runId, 'in this page or process');
  }

  async readBundle(runId: string): Promise<RunBundle> {
    const data = this.#data(runId);
    return clone({ run: data.run, items: data.items, steps: data.steps, pending: [...data.pending.values()], ...(data.adapter ? { adapter: data.adapter } : {}) });
  }

  async writeBundle(bundle: RunBundle, options: { replace?: boolean } = {}): Promise<void> {
    const id = bundle.run.id;
    if (this.#runs.has(id) && !options.replace) throw bundleExists(id);
    if (this.#locks.has(id)) throw alreadyRunning(id, 'in this page or process');
    const copy = clone(bundle);
    this.#runs.set(id, {
      run: copy.run,
      items: copy.items,
      steps: copy.steps,
      pending: new Map(copy.pending.map((r) => [`${r.step}:${r.position}`, r])),
      ...(copy.adapter ? { adapter: copy.adapter } : {}),
    });
  }

  async close(): Promise<void> {
    // Nothing to release: the data lives as long as this object.
  }

  #data(runId: string): RunData {
    const data = this.#runs.get(runId);
    if (!data) throw new NotFoundError(`No run "${runId}" in this store.`);
    return data;
  }
}
