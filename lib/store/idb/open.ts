/** Opening the webgrpo IndexedDB database, shared by the run store and the session store. */
import { openDB, type IDBPDatabase } from 'idb';
import { mapErrors } from './errors.js';
import { migrate, SCHEMA_VERSION, type WebgrpoDB } from './schema.js';
import type { RecordLookup } from '../records/kind.js';

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
