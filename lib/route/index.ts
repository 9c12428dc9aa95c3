export * from './router.js';
export { armPrompt } from './arm.js';
