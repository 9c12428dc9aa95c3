/**
 * `webgrpo/idb`: the IndexedDB stores for browsers: training runs, and the groups of ask/tell
 * sessions. A separate entry so that the core package stays free of dependencies; this one brings
 * `idb` (about 1 kB).
 *
 * @module webgrpo/idb
 */
import { methodRecords } from './methods/records.js';
import { openIdbStore as openWith, type IdbStore, type IdbStoreOptions } from './store/idb/store.js';
import { openIdbSessionStore as openSessionWith, type IdbSessionStore, type IdbSessionStoreOptions } from './store/idb/groups.js';
import { sealUnverified as sealWith } from './store/idb/seal.js';

export { IdbStore, type IdbStoreOptions } from './store/idb/store.js';
export { SCHEMA_VERSION as IDB_SCHEMA_VERSION } from './store/idb/schema.js';
export { IdbSessionStore, type IdbSessionStoreOptions } from './store/idb/groups.js';

/** Opens (creating or migrating) the database and returns a run store on it, reading runs of every registered method. */
export function openIdbStore(options: Partial<IdbStoreOptions> = {}): Promise<IdbStore> {
  return openWith({ ...options, records: options.records ?? methodRecords });
}

/** Opens (creating or migrating) the database and returns its ask/tell group store. */
export function openIdbSessionStore(options: Partial<IdbSessionStoreOptions> = {}): Promise<IdbSessionStore> {
  return openSessionWith({ ...options, records: options.records ?? methodRecords });
}

/**
 * Seals, once, the records of a database written before records carried checksums (which are
 * otherwise read as damage: nothing in them can be verified); returns the records rewritten (object
 * store and key). Only for a database whose records you trust as they are, with no run training on it.
 */
export function sealUnverifiedIdb(options: Partial<Pick<IdbStoreOptions, 'name' | 'records'>> = {}): Promise<string[]> {
  return sealWith(options.name ?? 'webgrpo', options.records ?? methodRecords);
}
