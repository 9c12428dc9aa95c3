export * from './errors.js';
export * from './math/index.js';
export * from './route/router.js';
export type * from './policy/types.js';
