/**
 * `webgrpo/server` (Node only): an OpenAI-compatible HTTP server over any `Policy`, with ask/tell
 * feedback, groups and JSONL feedback logging. `npx webgrpo serve` is its command line.
 *
 * @module webgrpo/server
 */
export { serve, type ServeOptions, type WebgrpoServer } from './serve/server.js';
export { closeOnSignals } from './serve/signals.js';
export { ApiError, type ApiErrorType } from './serve/api-error.js';
