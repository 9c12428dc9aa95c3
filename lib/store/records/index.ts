/**
 * What a run stores, every record type in one import. Everything is plain JSON-compatible data, so
 * every store (memory, IndexedDB, files) and the export format hold exactly the same thing; each
 * concept has its own file, and each method's own part of them is in its folder's record.ts.
 */
export type * from './run.js';
export type * from './item.js';
export type * from './step.js';
export type * from './evaluation.js';
export type * from './bundle.js';
