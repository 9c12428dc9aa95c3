/** `webgrpo/node`: Node-only parts (they use `node:` modules): the file-backed run and session stores, and JSONL files. */
export { openFileStore, FileStore, FILE_STORE_VERSION } from './store/file.js';
export { openFileSessionStore, FileSessionStore } from './store/file-groups.js';
export { jsonlFileSink, writeJsonlFile, type JsonlFileSink } from './export/file.js';
export { openEpochExport, type EpochExportFile } from './export/epoch-file.js';
