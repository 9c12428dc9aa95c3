export * from './errors.js';
export * from './math/index.js';
export * from './route/router.js';
export type * from './policy/types.js';
export * from './session/index.js';
export * from './export/index.js';
export * from './worker/index.js';
