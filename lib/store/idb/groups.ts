/**
 * `IdbSessionStore`: an ask/tell session's groups in the browser's IndexedDB, in the same database
 * as the runs (object store `groups`, added in schema version 3). Each `put` is one transaction, so a group
 * is stored whole or not at all; a full quota is a `StoreQuotaError` that leaves the group as it was.
 * Each group is written with the stores' checksums and checked as it is read (../integrity.ts): an
 * edited group, or one without checksums, is a `StoreCorruptError` and is never told (seal.ts
 * seals a database written before them, on its owner's word).
 */
import type { IDBPDatabase } from 'idb';
import { StoreError } from '../../errors.js';
import type { GroupRecord, SessionStore } from '../records/session.js';
import type { WebgrpoDB } from './schema.js';
import { inWriteTransaction, mapErrors, openStoreOn } from './database.js';
import type { RecordLookup } from '../records/kind.js';
import { sealed } from '../checksum.js';
import { checkGroup } from '../integrity.js';
import { WritesInFlight } from '../rules.js';

export interface IdbSessionStoreOptions {
  /** Database name. Default `webgrpo` (the run store's). */
  name?: string;
  /** The run kinds whose records a schema upgrade rewrites; `webgrpo/idb` passes the registered methods'. */
  records: RecordLookup;
}

/** Opens (creating or migrating) the database and returns its group store. */
export async function openIdbSessionStore(options: IdbSessionStoreOptions): Promise<IdbSessionStore> {
  const name = options.name ?? 'webgrpo';
  return openStoreOn(name, options.records, (db) => new IdbSessionStore(db, name));
}

const REMEDY = 'free space (delete old runs or groups) and try again';

export class IdbSessionStore implements SessionStore {
  readonly #db: IDBPDatabase<WebgrpoDB>;
  readonly #name: string;
  readonly #writes = new WritesInFlight();
  #closed = false;

  constructor(db: IDBPDatabase<WebgrpoDB>, name: string) {
    this.#db = db;
    this.#name = name;
  }

  async put(group: GroupRecord): Promise<void> {
    this.#checkOpen();
    const write = mapErrors(`store group "${group.id}"`, () => inWriteTransaction(this.#db, ['groups'], (tx) => tx.objectStore('groups').put(sealed(group))), REMEDY);
    await this.#writes.track(write);
  }

  async get(id: string): Promise<GroupRecord | undefined> {
    this.#checkOpen();
    const row = await mapErrors(`read group "${id}"`, () => this.#db.get('groups', id));
    return row === undefined ? undefined : this.#checked(row, id);
  }

  /** Every group, oldest first (by `createdAt`, then id). */
  async list(): Promise<GroupRecord[]> {
    this.#checkOpen();
    const rows = await mapErrors('list the stored groups', () => this.#db.getAllFromIndex('groups', 'created'));
    return rows.map((row) => this.#checked(row, row.id));
  }

  #checked(row: unknown, id: string): GroupRecord {
    const what = `the groups record ${JSON.stringify(id)} in IndexedDB database "${this.#name}"`;
    return checkGroup(row, id, what, 'delete that record (its group is then unknown to the session); a database written before checksums is sealed once with sealUnverifiedIdb({ name }) from webgrpo/idb');
  }

  /** Resolves when every `put` started so far has committed (each has, once it resolves). */
  async flush(): Promise<void> {
    await this.#writes.flush();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.flush();
    this.#db.close();
  }

  #checkOpen(): void {
    if (this.#closed) throw new StoreError(`IndexedDB database "${this.#name}" is closed; open a new session store.`);
  }
}
