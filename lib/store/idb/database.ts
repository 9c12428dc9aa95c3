/**
 * The webgrpo IndexedDB database, shared by the run store, the session store and the seal: opening
 * it (creating or migrating it), its transactions, and its failures as webgrpo's typed store errors.
 */
import { openDB, type IDBPDatabase, type IDBPTransaction, type StoreNames } from 'idb';
import { StoreError, StoreQuotaError, WebgrpoError } from '../../errors.js';
import { migrate, SCHEMA_VERSION, type WebgrpoDB } from './schema.js';
import type { RecordLookup } from '../records/kind.js';

export type Names = StoreNames<WebgrpoDB>;
export type Tx<N extends Names[], M extends IDBTransactionMode> = IDBPTransaction<WebgrpoDB, N, M>;

/**
 * Opens the database `name`, creating or migrating it to the current schema. `onBlocking` runs when
 * another tab wants a newer schema: close the connection then, rather than block its upgrade. A
 * migration reads the stored runs with `records`.
 */
export async function openWebgrpoDatabase(name: string, records: RecordLookup, onBlocking: () => void): Promise<IDBPDatabase<WebgrpoDB>> {
  return mapErrors(`open IndexedDB database "${name}"`, () =>
    openDB<WebgrpoDB>(name, SCHEMA_VERSION, {
      upgrade: (database, oldVersion, newVersion, tx) => migrate(database, oldVersion, newVersion ?? SCHEMA_VERSION, tx, records),
      blocked: () => undefined,
      blocking: onBlocking,
    }),
  );
}

/** A store (`make`) on the database `name`, which it closes when another tab wants a newer schema. */
export async function openStoreOn<S extends { close(): Promise<void> }>(name: string, records: RecordLookup, make: (db: IDBPDatabase<WebgrpoDB>) => S): Promise<S> {
  let store: S | undefined;
  const db = await openWebgrpoDatabase(name, records, () => void store?.close());
  store = make(db);
  return store;
}

/**
 * `body` in one read-write transaction on `names`: any error aborts it, so nothing of it is kept
 * (a request that throws as it is made, a quota or data error, included).
 */
export async function inWriteTransaction<N extends Names[], T>(db: IDBPDatabase<WebgrpoDB>, names: N, body: (tx: Tx<N, 'readwrite'>) => Promise<T>): Promise<T> {
  const tx = db.transaction(names, 'readwrite');
  const done = tx.done;
  done.catch(() => undefined);
  let value: T;
  try {
    value = await body(tx);
  } catch (error) {
    try {
      tx.abort();
    } catch {
      // Already finished or aborted by the failed request itself.
    }
    throw error;
  }
  await done;
  return value;
}

/**
 * Issues the requests of a transaction in order and awaits them. If one throws as it is made (a
 * quota or data error), the requests already made are rejected by the abort that follows; they are
 * marked handled here so that only the first error surfaces.
 */
export async function requests(issue: Array<() => Promise<unknown>>): Promise<void> {
  const made: Promise<unknown>[] = [];
  for (const request of issue) {
    const promise = request();
    promise.catch(() => undefined);
    made.push(promise);
  }
  await Promise.all(made);
}

export function runRange(runId: string): IDBKeyRange {
  return IDBKeyRange.bound([runId], [runId, []]);
}

export function stripRunId<T extends { runId: string }>(row: T): Omit<T, 'runId'> {
  const { runId: _runId, ...rest } = row;
  return rest;
}

/**
 * Our typed errors pass through; quota failures become `StoreQuotaError`; the rest `StoreError`.
 * `remedy` ends the quota message.
 */
export async function mapErrors<T>(what: string, body: () => Promise<T>, remedy = 'free space (delete old runs) and resume'): Promise<T> {
  try {
    return await body();
  } catch (error) {
    if (isQuotaError(error)) {
      throw new StoreQuotaError(
        `Could not ${what}: the browser's storage quota for this site is used up. Nothing of this write was kept; ${remedy}.`,
        { cause: error },
      );
    }
    if (error instanceof WebgrpoError) throw error;
    throw new StoreError(`Could not ${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

function isQuotaError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const name = (error as { name?: unknown }).name;
  if (name === 'QuotaExceededError') return true;
  // Some engines report the abort with the quota error as its cause.
  const cause = (error as { cause?: unknown }).cause;
  return cause !== undefined && cause !== error && isQuotaError(cause);
}
