export * from './errors.js';
export type * from './policy/types.js';
