/** `webgrpo/node`: Node-only parts (they use `node:` modules): the file-backed run store. */
export { openFileStore, FileStore, FILE_STORE_VERSION } from './store/file.js';
