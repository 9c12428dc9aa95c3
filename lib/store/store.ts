/**
 * The `Store` interface: where runs live. Three implementations keep the same data with the same
 * guarantees: `MemoryStore` (core), `IdbStore` (`webgrpo/idb`, the browser) and `FileStore`
 * (`webgrpo/node`, the CLI).
 *
 * Guarantees every implementation gives:
 *  - each write is atomic: a crash or a closed tab leaves either all of it or none of it;
 *  - `commitStep` is the step's one transaction: the step record (items and the method's payload,
 *    an experience library snapshot among them) lands together with the removal of that
 *    step's pending item results;
 *  - a quota failure throws `StoreQuotaError` and rolls the write back, so the run stays as it was;
 *  - reads return copies: mutating them never changes what is stored.
 *
 * The rest of this folder, by concept:
 *  - records/: what a run stores (run, item, step, evaluation, bundle, session records; the
 *    `RecordKind` a method hands over), the checks of what comes from outside (validate.ts) and
 *    the v4 steps' upgrade; the methods' own parts are declared in their record.ts (run.ts says how);
 *  - rules.ts: what every store does alike (order, errors, the run lock's hold, damage, flush);
 *  - checksum.ts and integrity.ts: the persistent stores' checksums and read-back checks;
 *  - run-export.ts: a whole run as one JSON document (export, import);
 *  - memory/, file/ (`webgrpo/node`), idb/ (`webgrpo/idb`): one folder per backend, each with
 *    its run store (store.ts) and its ask/tell session store (groups.ts).
 */
import type { StoreCorruptError } from '../errors.js';
import type { AnyRunRecord, EvaluationRecord, ItemResult, RunBundle, RunRecord, RunStatus, StepExtras, StepPayloadBase, StepRecord, StoredCheckpoint } from './records/index.js';
import type { DatasetItem } from '../core/dataset.js';

export interface RunLock {
  readonly runId: string;
  /** Lets another loop run this run. Idempotent. */
  release(): Promise<void>;
}

export interface RunStatusPatch {
  status: RunStatus;
  error?: string;
}

/** A run that cannot be read whole, and the error a read of it gives (naming the file or record, and the field). */
export interface DamagedRun {
  runId: string;
  error: StoreCorruptError;
}

export interface StepRange {
  /** First step (inclusive). */
  from?: number;
  /** Last step (inclusive). */
  to?: number;
}

export interface Store {
  /** `memory`, `indexeddb` or `file`. */
  readonly kind: string;

  /** Stores a new run and its dataset. Throws `StoreError` if the id is taken. */
  createRun(run: AnyRunRecord, items: DatasetItem[]): Promise<void>;
  /** Undefined for an unknown run; `StoreCorruptError` for a run whose record is damaged (or, in files, missing from its folder). */
  getRun(runId: string): Promise<RunRecord | undefined>;
  /**
   * Every run, most recently updated first. A run whose record is missing or damaged is left out:
   * `listDamaged` names it.
   */
  listRuns(): Promise<RunRecord[]>;
  /**
   * The runs that cannot be read whole: a missing or damaged record of any kind (the run's own,
   * its dataset, a step, a pending item, the adapter checkpoint), one edited since it was written,
   * or steps out of step with the run's schedule. Reads every record of every run; changes nothing
   * (a damaged run is never repaired or deleted here). A resume of any other run finds what it needs.
   */
  listDamaged(): Promise<DamagedRun[]>;
  /** Sets a run's status (and `updatedAt`). Throws `NotFoundError` for an unknown run. */
  setRunStatus(runId: string, patch: RunStatusPatch): Promise<void>;
  /**
   * Keeps a held-out evaluation with the run (in `RunRecord.evaluations`, replacing one of the same
   * epoch). Throws `NotFoundError` for an unknown run.
   */
  putEvaluation(runId: string, evaluation: EvaluationRecord): Promise<void>;
  /** Removes a run and everything stored with it. */
  deleteRun(runId: string): Promise<void>;

  getItems(runId: string): Promise<DatasetItem[]>;

  /** Records one finished item of a step in progress, so a resume does not redo it. */
  putItemResult(runId: string, result: ItemResult): Promise<void>;
  /** Finished items of a step that is not committed yet, by batch position. */
  getItemResults(runId: string, step: number): Promise<ItemResult[]>;

  /**
   * Commits a step in one transaction. Throws `StoreError` if the step exists already or is not
   * the one after the last committed step (another loop got there first). `extras.adapter` (runs whose kind
   * keeps an adapter) replaces the run's adapter checkpoint in the same transaction.
   */
  commitStep(runId: string, step: StepRecord<StepPayloadBase>, extras?: StepExtras): Promise<void>;
  getStep(runId: string, step: number): Promise<StepRecord | undefined>;
  listSteps(runId: string, range?: StepRange): Promise<StepRecord[]>;
  /** The last committed step, or undefined before the first. */
  lastStep(runId: string): Promise<StepRecord | undefined>;
  /** Runs whose kind keeps an adapter: the checkpoint committed with the last step, or undefined before the first. */
  getAdapter(runId: string): Promise<StoredCheckpoint | undefined>;

  /**
   * Claims the run for one loop. Throws `AlreadyRunningError` while another loop holds it: in
   * this store, another tab (IndexedDB, through Web Locks or a heartbeat lease), or another live
   * process (files, through a lock file naming its pid).
   */
  lockRun(runId: string): Promise<RunLock>;

  /** The whole run, for export. Throws `NotFoundError` for an unknown run. */
  readBundle(runId: string): Promise<RunBundle>;
  /**
   * Writes a whole run in one transaction (import). Throws `StoreError` if the id is taken,
   * unless `replace` is set (then the old run is replaced atomically).
   */
  writeBundle(bundle: RunBundle, options?: { replace?: boolean }): Promise<void>;

  close(): Promise<void>;
}
