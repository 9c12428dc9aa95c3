/**
 * `webgrpo/node`: Node-only parts (they use `node:` modules): the file-backed run and session stores, and JSONL files.
 *
 * @module webgrpo/node
 */
import { methodRecords } from './methods/records.js';
import { openFileStore as openWith, type FileStore, type FileStoreOptions } from './store/file/store.js';
import { openFileSessionStore as openSessionWith, type FileSessionStore } from './store/file/groups.js';
import { sealUnverified as sealWith } from './store/file/seal.js';

export { FileStore, FILE_STORE_VERSION, type FileStoreOptions } from './store/file/store.js';
export { FileSessionStore } from './store/file/groups.js';
export { jsonlFileSink, writeJsonlFile, type JsonlFileSink } from './export/file.js';
export { openEpochExport, type EpochExportFile } from './export/epoch-file.js';

/** Opens (creating or migrating) a run store in the folder `root`, reading runs of every registered method. */
export function openFileStore(root: string, options: Partial<FileStoreOptions> = {}): Promise<FileStore> {
  return openWith(root, { records: options.records ?? methodRecords });
}

/** Opens (creating or migrating) the store folder `root` and returns its ask/tell group store. */
export function openFileSessionStore(root: string, options: Partial<FileStoreOptions> = {}): Promise<FileSessionStore> {
  return openSessionWith(root, { records: options.records ?? methodRecords });
}

/**
 * Seals, once, the records of a store folder written before records carried checksums (which are
 * otherwise read as damage: nothing in them can be verified); returns the files rewritten. Only for
 * a store whose files you trust as they are, with no run training on it.
 */
export function sealUnverified(root: string, options: Partial<FileStoreOptions> = {}): Promise<string[]> {
  return sealWith(root, options.records ?? methodRecords);
}
