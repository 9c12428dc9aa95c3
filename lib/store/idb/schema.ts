/**
 * The IndexedDB schema, as the list of migrations that builds it. A new database runs them all; an
 * older one runs those above its version, inside the upgrade transaction, so data is carried over
 * or nothing changes. To change the schema, append a migration; never edit a shipped one.
 */
import type { DBSchema, IDBPDatabase, IDBPTransaction, StoreNames } from 'idb';
import type { GroupRecord } from '../records/session.js';
import { upgradeV4Step } from '../records/upgrade-v4.js';
import type { RecordLookup } from '../records/kind.js';
import type { ItemResult, RunRecord, StepRecord, StoredCheckpoint } from '../records/index.js';
import type { DatasetItem } from '../../core/dataset.js';

export interface ItemRow {
  runId: string;
  index: number;
  item: DatasetItem;
}
export type StepRow = StepRecord & { runId: string };
export type PendingRow = ItemResult & { runId: string };
export type AdapterRow = StoredCheckpoint & { runId: string };
export interface LeaseRow {
  runId: string;
  owner: string;
  /** ms since epoch; the lease is free after this unless its holder renews it. */
  expiresAt: number;
}

export interface WebgrpoDB extends DBSchema {
  runs: { key: string; value: RunRecord };
  items: { key: [string, number]; value: ItemRow };
  steps: { key: [string, number]; value: StepRow };
  pending: { key: [string, number, number]; value: PendingRow };
  leases: { key: string; value: LeaseRow };
  /** Ask/tell session groups (`openIdbSessionStore`); `created` lists them oldest first. */
  groups: { key: string; value: GroupRecord; indexes: { created: [number, string] } };
  adapters: { key: string; value: AdapterRow };
}

export type UpgradeTx = IDBPTransaction<WebgrpoDB, ArrayLike<StoreNames<WebgrpoDB>>, 'versionchange'>;
/** One schema step; `records` reads the runs whose records it rewrites. */
export type Migration = (db: IDBPDatabase<WebgrpoDB>, tx: UpgradeTx, records: RecordLookup) => void;

export const MIGRATIONS: readonly Migration[] = [
  // v1: runs, their datasets, committed steps and the finished items of the step in progress.
  (db) => {
    db.createObjectStore('runs', { keyPath: 'id' });
    db.createObjectStore('items', { keyPath: ['runId', 'index'] });
    db.createObjectStore('steps', { keyPath: ['runId', 'step'] });
    db.createObjectStore('pending', { keyPath: ['runId', 'step', 'position'] });
  },
  // v2: heartbeat leases, the cross-tab run lock where the Web Locks API is missing.
  (db) => {
    db.createObjectStore('leases', { keyPath: 'runId' });
  },
  // v3: the groups of ask/tell sessions, beside the runs.
  (db) => {
    db.createObjectStore('groups', { keyPath: 'id' }).createIndex('created', ['createdAt', 'id']);
  },
  // v4: the adapter checkpoint of each run that trains an adapter (the latest; replaced at every step commit).
  (db) => {
    db.createObjectStore('adapters', { keyPath: 'runId' });
  },
  // v5: step records hold the method's fields in `payload`, under their run's kind.
  (_db, tx, records) => {
    upgradeSteps(tx, records).catch(() => tx.abort());
  },
];

/** Rewrites every stored v4 step row in the upgrade transaction (a failure aborts the upgrade, leaving v4 as it was). */
async function upgradeSteps(tx: UpgradeTx, records: RecordLookup): Promise<void> {
  const kinds = new Map((await tx.objectStore('runs').getAll()).map((run) => [run.id, (run as { kind?: unknown }).kind]));
  let cursor = await tx.objectStore('steps').openCursor();
  while (cursor) {
    const row = cursor.value;
    const upgraded = upgradeV4Step(row, kinds.get(row.runId), records);
    if (upgraded !== row) await cursor.update(upgraded as StepRow);
    cursor = await cursor.continue();
  }
}

/** The IndexedDB database version this webgrpo writes (exported as `IDB_SCHEMA_VERSION`): one per migration. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** Runs the migrations from `oldVersion` up to `newVersion` (an `upgrade` callback for `openDB`), reading runs with `records`. */
export function migrate(db: IDBPDatabase<WebgrpoDB>, oldVersion: number, newVersion: number, tx: UpgradeTx, records: RecordLookup): void {
  for (let version = oldVersion; version < newVersion; version++) MIGRATIONS[version](db, tx, records);
}
