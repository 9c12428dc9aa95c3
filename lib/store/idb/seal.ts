/**
 * `sealUnverifiedIdb` (webgrpo/idb): the explicit upgrade of a database written before records carried
 * checksums (every webgrpo before them, IndexedDB schema 5 and the earlier schemas migrated to
 * it). Reading refuses a record without checksums, since deleting its `integrity` field would
 * otherwise hide any edit; whoever trusts the database as it is says so by sealing it once, and
 * every later edit is caught.
 *
 * Each row of `runs`, `steps`, `pending`, `adapters` and `groups` (the ask/tell sessions') without
 * checksums, and each `items` row whose item has none, is rewritten with them, in one transaction (all of them or none); rows that
 * have them, whatever they say, are left alone, so a record edited since its seal stays damaged.
 * Nothing else is read or checked: run it on a database you trust, with no run training on it.
 */
import { INTEGRITY, sealed } from '../checksum.js';
import { inWriteTransaction, mapErrors, openWebgrpoDatabase } from './database.js';
import type { RecordLookup } from '../records/kind.js';

type Obj = Record<string, unknown>;

/** The object stores whose rows carry checksums (`leases` are the lock's, not records). */
const STORES = ['runs', 'items', 'steps', 'pending', 'adapters', 'groups'] as const;

const isObj = (value: unknown): value is Obj => typeof value === 'object' && value !== null && !Array.isArray(value);
const unsealed = (value: unknown): value is Obj => isObj(value) && !(INTEGRITY in value);

/** Seals the records without checksums in the database `name`; returns the records it rewrote (object store and key). */
export async function sealUnverified(name: string, records: RecordLookup): Promise<string[]> {
  const db = await openWebgrpoDatabase(name, records, () => db.close());
  try {
    // All or nothing: a failed update (a full quota) keeps none of the others.
    return await mapErrors(`seal the records of IndexedDB database "${name}"`, () =>
      inWriteTransaction(db, [...STORES], async (tx) => {
        const rewritten: string[] = [];
        for (const store of STORES) {
          let cursor = await tx.objectStore(store).openCursor();
          while (cursor) {
            const row: unknown = cursor.value;
            const next = store === 'items' ? sealedItem(row) : sealedRow(row, store !== 'runs' && store !== 'groups');
            if (next !== undefined) {
              // The row's key is kept: the seal only adds `integrity`.
              await cursor.update(next as never);
              rewritten.push(`${store} ${JSON.stringify(cursor.primaryKey)}`);
            }
            cursor = await cursor.continue();
          }
        }
        return rewritten;
      }),
    );
  } finally {
    db.close();
  }
}

/** A row sealed over its record (without `runId`, which the stores keep beside the checksums), or undefined when it has them or is not a record. */
function sealedRow(row: unknown, keyedByRun: boolean): Obj | undefined {
  if (!unsealed(row)) return undefined;
  if (!keyedByRun) return sealed(row);
  const { runId, ...record } = row;
  return { ...sealed(record), runId };
}

function sealedItem(row: unknown): Obj | undefined {
  if (!isObj(row) || !unsealed(row.item)) return undefined;
  return { ...row, item: sealed(row.item) };
}
