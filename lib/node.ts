/** `webgrpo/node`: Node-only parts (they use `node:` modules): the file-backed run store and JSONL files. */
export { openFileStore, FileStore, FILE_STORE_VERSION } from './store/file.js';
export { jsonlFileSink, writeJsonlFile, type JsonlFileSink } from './export/file.js';
