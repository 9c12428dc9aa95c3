/** Transactions of the webgrpo IndexedDB database: their type, requests issued in order, a run's key range, rows without their run id. */
import type { IDBPTransaction, StoreNames } from 'idb';
import type { WebgrpoDB } from './schema.js';

export type Names = StoreNames<WebgrpoDB>;
export type Tx<N extends Names[], M extends IDBTransactionMode> = IDBPTransaction<WebgrpoDB, N, M>;

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
