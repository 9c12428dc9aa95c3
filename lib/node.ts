/** `webgrpo/node`: Node-only helpers (files). */
export { jsonlFileSink, writeJsonlFile, type JsonlFileSink } from './export/file.js';
