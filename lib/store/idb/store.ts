/**
 * `IdbStore`: runs kept in the browser's IndexedDB, through `idb`. Entry point `webgrpo/idb`, so
 * the core package stays free of dependencies.
 *
 * Each method is one IndexedDB transaction; a failed request aborts its transaction, so a write is
 * all or nothing (a quota failure becomes `StoreQuotaError` with the run untouched). The run lock
 * uses the Web Locks API where it exists (held by this tab, released by the browser when the tab
 * closes or crashes) and otherwise a lease row renewed by a heartbeat. Each record is written with
 * checksums of its fields (../checksum.ts; a dataset row: its item), checked as it is read
 * (../integrity.ts); a record without them is damage (seal.ts seals a database written before
 * them, on its owner's word).
 */
import type { IDBPDatabase } from 'idb';
import { NotFoundError, StoreCorruptError, StoreError } from '../../errors.js';
import { lockRunInIdb } from './lock.js';
import type { AdapterRow, PendingRow, StepRow, WebgrpoDB } from './schema.js';
import { inWriteTransaction, mapErrors, openStoreOn, requests, runRange, stripRunId, type Names, type Tx } from './database.js';
import { sealed } from '../checksum.js';
import { checkAdapter, checkCompleted, checkItems, checkPending, checkProgress, checkRun, checkStep, checkStepNumbers, remedy, requireSeal } from '../integrity.js';
import { alreadyRunning, bundleExists, byRecentUpdate, checkNextStep, damagedAmong, holdRun, keepsAdapter, leftOut, runExists, withEvaluation, withStatus } from '../rules.js';
import type { EvaluationRecord, ItemResult, RunBundle, RunRecord, StepExtras, StepRecord, StoredCheckpoint } from '../records/index.js';
import type { DatasetItem } from '../../core/dataset.js';
import type { DamagedRun, RunLock, RunStatusPatch, StepRange, Store } from '../store.js';
import type { RecordLookup } from '../records/kind.js';

/** How a database written before checksums is sealed, for the message that finds a record without them. */
const IDB_SEAL = 'sealUnverifiedIdb({ name }) from webgrpo/idb';

export interface IdbStoreOptions {
  /** Database name. Default `webgrpo`. */
  name?: string;
  /** Lease length where Web Locks are missing, in ms; renewed every third of it. Default 10000. */
  leaseMs?: number;
  /** The run kinds it reads (their records: checks, migrations); `webgrpo/idb` passes the registered methods'. */
  records: RecordLookup;
}

/** Opens (creating or migrating) the database and returns a store on it. */
export async function openIdbStore(options: IdbStoreOptions): Promise<IdbStore> {
  const name = options.name ?? 'webgrpo';
  return openStoreOn(name, options.records, (db) => new IdbStore(db, { name, leaseMs: options.leaseMs ?? 10_000, records: options.records }));
}

/** A `Store` in the browser's IndexedDB (`openIdbStore`): every record checksummed, a run held by Web Locks (or a renewed lease) while it trains. */
export class IdbStore implements Store {
  readonly kind = 'indexeddb';
  readonly #db: IDBPDatabase<WebgrpoDB>;
  readonly #name: string;
  readonly #leaseMs: number;
  readonly #records: RecordLookup;
  readonly #held = new Set<string>();
  #closed = false;

  constructor(db: IDBPDatabase<WebgrpoDB>, options: Required<IdbStoreOptions>) {
    this.#db = db;
    this.#name = options.name;
    this.#leaseMs = options.leaseMs;
    this.#records = options.records;
  }

  async createRun(run: RunRecord, items: DatasetItem[]): Promise<void> {
    await this.#write(['runs', 'items'], `create run "${run.id}"`, async (tx) => {
      if (await tx.objectStore('runs').getKey(run.id)) {
        throw runExists(run.id);
      }
      await requests([() => tx.objectStore('runs').add(sealed(run)), ...items.map((item, index) => () => tx.objectStore('items').add({ runId: run.id, index, item: sealed(item) }))]);
    });
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const run = await this.#read(['runs'], (tx) => tx.objectStore('runs').get(runId));
    return run === undefined ? undefined : this.#run(run, runId);
  }

  async listRuns(): Promise<RunRecord[]> {
    const rows = await this.#read(['runs'], (tx) => tx.objectStore('runs').getAll());
    const runs = rows.map((row) => {
      try {
        return this.#run(row, row.id);
      } catch (error) {
        return leftOut(error);
      }
    });
    return runs.filter((run): run is RunRecord => run !== undefined).sort(byRecentUpdate);
  }

  async listDamaged(): Promise<DamagedRun[]> {
    // Every run id anything is stored under: a run may have lost its record and kept the rest.
    const [records, ...others] = await this.#read(['runs', 'items', 'steps', 'pending', 'adapters'], (tx) =>
      Promise.all([tx.objectStore('runs').getAllKeys(), tx.objectStore('items').getAllKeys(), tx.objectStore('steps').getAllKeys(), tx.objectStore('pending').getAllKeys(), tx.objectStore('adapters').getAllKeys()]),
    );
    const withRecord = new Set<string>(records);
    const ids = new Set<string>([...records, ...others.flatMap((keys) => keys.map((key) => (typeof key === 'string' ? key : key[0])))]);
    return damagedAmong([...ids].sort(), async (runId) => {
      if (!withRecord.has(runId)) {
        const what = this.#what('runs', runId);
        throw new StoreCorruptError(what, `${what} is missing, but IndexedDB database "${this.#name}" holds the rest of run "${runId}"; ${remedy(runId)}.`);
      }
      await this.readBundle(runId);
    });
  }

  async setRunStatus(runId: string, patch: RunStatusPatch): Promise<void> {
    await this.#write(['runs', 'steps'], `update run "${runId}"`, async (tx) => {
      const checked = this.#known(await tx.objectStore('runs').get(runId), runId);
      if (patch.status === 'completed') checkCompleted(checked, await tx.objectStore('steps').count(runRange(runId)), this.#what('steps', runId));
      await tx.objectStore('runs').put(sealed(withStatus(checked, patch)));
    });
  }

  async putEvaluation(runId: string, evaluation: EvaluationRecord): Promise<void> {
    await this.#write(['runs'], `keep the evaluation of epoch ${evaluation.epoch}`, async (tx) => {
      const run = this.#known(await tx.objectStore('runs').get(runId), runId);
      await tx.objectStore('runs').put(sealed(withEvaluation(run, evaluation)));
    });
  }

  async deleteRun(runId: string): Promise<void> {
    await this.#write(['runs', 'items', 'steps', 'pending', 'leases', 'adapters'], `delete run "${runId}"`, async (tx) => {
      await requests([
        () => tx.objectStore('runs').delete(runId),
        () => tx.objectStore('items').delete(runRange(runId)),
        () => tx.objectStore('steps').delete(runRange(runId)),
        () => tx.objectStore('pending').delete(runRange(runId)),
        () => tx.objectStore('leases').delete(runId),
        () => tx.objectStore('adapters').delete(runId),
      ]);
    });
  }

  async getItems(runId: string): Promise<DatasetItem[]> {
    const run = await this.#requireRun(runId);
    const rows = await this.#read(['items'], (tx) => tx.objectStore('items').getAll(runRange(runId)));
    return this.#items(run, rows);
  }

  async putItemResult(runId: string, result: ItemResult): Promise<void> {
    await this.#write(['pending'], `record item ${result.index} of step ${result.step}`, async (tx) => {
      await tx.objectStore('pending').put({ ...sealed(result), runId });
    });
  }

  async getItemResults(runId: string, step: number): Promise<ItemResult[]> {
    const run = await this.#requireRun(runId);
    const [last, rows] = await this.#read(['steps', 'pending'], async (tx) => [
      await this.#lastNumber(tx, run),
      await tx.objectStore('pending').getAll(IDBKeyRange.bound([runId, step], [runId, step, []])),
    ] as const);
    if (step <= last) return [];
    return rows.map((row) => this.#pending(row, step - 1, run));
  }

  async commitStep(runId: string, step: StepRecord, extras: StepExtras = {}): Promise<void> {
    await this.#write(['runs', 'steps', 'pending', 'adapters'], `commit step ${step.step}`, async (tx) => {
      const run = this.#known(await tx.objectStore('runs').get(runId), runId);
      const cursor = await tx.objectStore('steps').openCursor(runRange(runId), 'prev');
      checkNextStep(runId, cursor ? cursor.value.step : 0, step.step);
      await requests([
        () => tx.objectStore('steps').add({ ...sealed(step), runId }),
        () => tx.objectStore('pending').delete(IDBKeyRange.bound([runId], [runId, step.step, []])),
        () => tx.objectStore('runs').put(sealed({ ...run, updatedAt: step.committedAt })),
        ...(extras.adapter ? [() => tx.objectStore('adapters').put({ ...sealed(extras.adapter!), runId })] : []),
      ]);
    });
  }

  async getStep(runId: string, step: number): Promise<StepRecord | undefined> {
    const run = await this.getRun(runId);
    const row = run && (await this.#read(['steps'], (tx) => tx.objectStore('steps').get([runId, step])));
    return row && this.#step(row, run);
  }

  async listSteps(runId: string, range: StepRange = {}): Promise<StepRecord[]> {
    const run = await this.getRun(runId);
    if (!run) return [];
    const from = range.from ?? 0;
    const upper = range.to === undefined ? [runId, []] : [runId, range.to];
    const rows = await this.#read(['steps'], async (tx) => {
      await this.#lastNumber(tx, run);
      return tx.objectStore('steps').getAll(IDBKeyRange.bound([runId, from], upper));
    });
    return rows.map((row) => this.#step(row, run));
  }

  async lastStep(runId: string): Promise<StepRecord | undefined> {
    const run = await this.getRun(runId);
    if (!run) return undefined;
    const row = await this.#read(['steps'], async (tx) => {
      await this.#lastNumber(tx, run);
      return (await tx.objectStore('steps').openCursor(runRange(runId), 'prev'))?.value;
    });
    return row && this.#step(row, run);
  }

  async getAdapter(runId: string): Promise<StoredCheckpoint | undefined> {
    const run = await this.#requireRun(runId);
    const [last, row] = await this.#read(['steps', 'adapters'], async (tx) => [await this.#lastNumber(tx, run), await tx.objectStore('adapters').get(runId)] as const);
    const what = this.#what('adapters', runId);
    // Every step of a run whose kind keeps an adapter commits its checkpoint: without it a resume would restart the adapter from scratch.
    if (keepsAdapter(run.kind, this.#records) && last > 0 && (row === undefined || row.step !== last)) {
      throw new StoreCorruptError(what, `${what} ${row ? `is of step ${row.step}` : 'is missing'}, but step ${last} was committed with its checkpoint; ${remedy(runId)}.`);
    }
    return row && this.#adapter(row, run, last);
  }

  async lockRun(runId: string): Promise<RunLock> {
    await this.#requireRun(runId);
    return holdRun(this.#held, runId, 'in this page', () =>
      lockRunInIdb(this.#name, runId, { write: (names, what, body) => this.#write(names, what, body), leaseMs: this.#leaseMs, closed: () => this.#closed }),
    );
  }

  async readBundle(runId: string): Promise<RunBundle> {
    return this.#read(['runs', 'items', 'steps', 'pending', 'adapters'], async (tx) => {
      const run = this.#known(await tx.objectStore('runs').get(runId), runId);
      const [items, steps, pending, adapter] = await Promise.all([
        tx.objectStore('items').getAll(runRange(runId)),
        tx.objectStore('steps').getAll(runRange(runId)),
        tx.objectStore('pending').getAll(runRange(runId)),
        tx.objectStore('adapters').get(runId),
      ]);
      checkStepNumbers(steps.map((row) => row.step), runId, this.#what('steps', runId));
      checkProgress(run, steps.length, this.#what('steps', runId));
      const bundle: RunBundle = {
        run,
        items: this.#items(run, items),
        steps: steps.map((row) => this.#step(row, run)),
        pending: pending.map((row) => this.#pending(row, steps.length, run)),
      };
      if (adapter) bundle.adapter = this.#adapter(adapter, run, steps.length);
      return bundle;
    });
  }

  async writeBundle(bundle: RunBundle, options: { replace?: boolean } = {}): Promise<void> {
    const id = bundle.run.id;
    if (this.#held.has(id)) throw alreadyRunning(id, 'in this page');
    await this.#write(['runs', 'items', 'steps', 'pending', 'adapters'], `import run "${id}"`, async (tx) => {
      if ((await tx.objectStore('runs').getKey(id)) && !options.replace) {
        throw bundleExists(id);
      }
      await requests([
        () => tx.objectStore('items').delete(runRange(id)),
        () => tx.objectStore('steps').delete(runRange(id)),
        () => tx.objectStore('pending').delete(runRange(id)),
        () => tx.objectStore('adapters').delete(id),
        ...(bundle.adapter ? [() => tx.objectStore('adapters').put({ ...sealed(bundle.adapter!), runId: id })] : []),
        () => tx.objectStore('runs').put(sealed(bundle.run)),
        ...bundle.items.map((item, index) => () => tx.objectStore('items').add({ runId: id, index, item: sealed(item) })),
        ...bundle.steps.map((step) => () => tx.objectStore('steps').add({ ...sealed(step), runId: id })),
        ...bundle.pending.map((result) => () => tx.objectStore('pending').add({ ...sealed(result), runId: id })),
      ]);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
  }

  async #requireRun(runId: string): Promise<RunRecord> {
    return this.#known(await this.#read(['runs'], (tx) => tx.objectStore('runs').get(runId)), runId);
  }

  /** A run row read for a run that must exist: checked, and `NotFoundError` where there is none. */
  #known(row: unknown, runId: string): RunRecord {
    if (row === undefined) throw new NotFoundError(`No run "${runId}" in IndexedDB database "${this.#name}".`);
    return this.#run(row, runId);
  }

  /** The last committed step's number, checked to be the count of steps (no gap) and within the run's schedule. */
  async #lastNumber(tx: Tx<['steps', ...Names[]], IDBTransactionMode>, run: RunRecord): Promise<number> {
    const keys = await tx.objectStore('steps').getAllKeys(runRange(run.id));
    const last = checkStepNumbers(keys.map((key) => key[1]), run.id, this.#what('steps', run.id));
    checkProgress(run, last, this.#what('steps', run.id));
    return last;
  }

  /** A run's dataset rows: every index 0..itemCount-1, in order. */
  #items(run: RunRecord, rows: { index: number; item: DatasetItem }[]): DatasetItem[] {
    const what = this.#what('items', run.id);
    rows.forEach((row, i) => {
      if (row.index !== i) throw new StoreCorruptError(what, `${what} lack item ${i}; ${remedy(run.id)}.`);
    });
    const items = rows.length === 0 ? undefined : rows.map((row) => row.item);
    return this.#verified(items, what, run.id, () => checkItems(items, run, what));
  }

  /** A run row, checked; without its checksums, damage. */
  #run(row: unknown, runId: string): RunRecord {
    const what = this.#what('runs', runId);
    return this.#verified(row, what, runId, () => checkRun(row, runId, what, this.#records));
  }

  #step(row: StepRow, run: RunRecord): StepRecord {
    const what = this.#what('steps', run.id, row.step);
    const stored = stripRunId(row);
    return this.#verified(stored, what, run.id, () => checkStep(stored, row.step, run, what, this.#records));
  }

  #pending(row: PendingRow, committed: number, run: RunRecord): ItemResult {
    const what = this.#what('pending', run.id, row.step, row.position);
    const stored = stripRunId(row);
    return this.#verified(stored, what, run.id, () => checkPending(stored, committed, run, what));
  }

  #adapter(row: AdapterRow, run: RunRecord, last: number): StoredCheckpoint {
    const what = this.#what('adapters', run.id);
    const stored = stripRunId(row);
    return this.#verified(stored, what, run.id, () => checkAdapter(stored, run, last, what, this.#records));
  }

  /** `check(stored)`, refusing a record without checksums (seal.ts seals a database written before them, on its owner's word). */
  #verified<T>(stored: unknown, what: string, runId: string, check: () => T): T {
    return requireSeal(stored, what, runId, IDB_SEAL, check);
  }

  /** Names a record for messages: its object store and key. */
  #what(objectStore: string, runId: string, ...key: number[]): string {
    return `the ${objectStore} record${key.length ? '' : 's'} ${JSON.stringify([runId, ...key])} in IndexedDB database "${this.#name}"`;
  }

  async #read<N extends Names[], T>(names: N, body: (tx: Tx<N, 'readonly'>) => Promise<T>): Promise<T> {
    this.#checkOpen();
    return mapErrors('read from IndexedDB', async () => {
      const tx = this.#db.transaction(names, 'readonly');
      const [value] = await Promise.all([body(tx), tx.done]);
      return value;
    });
  }

  /** One read-write transaction; any error aborts it, so nothing of it is kept. */
  async #write<N extends Names[]>(names: N, what: string, body: (tx: Tx<N, 'readwrite'>) => Promise<void>): Promise<void> {
    this.#checkOpen();
    await mapErrors(what, () => inWriteTransaction(this.#db, names, body));
  }

  #checkOpen(): void {
    if (this.#closed) throw new StoreError(`IndexedDB database "${this.#name}" is closed; open a new store.`);
  }
}
