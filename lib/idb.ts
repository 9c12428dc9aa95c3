/**
 * `webgrpo/idb`: the IndexedDB stores for browsers: training runs, and the groups of ask/tell
 * sessions. A separate entry so that the core package stays free of dependencies; this one brings
 * `idb` (about 1 kB).
 */
export { openIdbStore, IdbStore, type IdbStoreOptions } from './store/idb.js';
export { SCHEMA_VERSION as IDB_SCHEMA_VERSION } from './store/idb-schema.js';
export { openIdbSessionStore, IdbSessionStore, type IdbSessionStoreOptions } from './store/idb-groups.js';
