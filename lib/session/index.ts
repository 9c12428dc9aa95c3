export { createSession, type AskInput, type AskResult, type ExternalCompletion, type Session, type SessionOptions, type TellInput, type TellResult } from './session.js';
export { MemorySessionStore, type MemorySessionStoreOptions } from '../store/memory/groups.js';
export { createTaskQueue, type QueueOptions, type QueueStats, type TaskQueue } from './queue.js';
export { completionId, parseCompletionId } from './records.js';
export type * from '../store/records/session.js';
