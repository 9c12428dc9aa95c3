export type * from './records.js';
export type { Store, RunLock, RunStatusPatch, StepRange, DamagedRun } from './types.js';
export type { RecordKind, RecordLookup, RunField } from './record-kind.js';
export { MemoryStore } from './memory.js';
export { exportRun, importRun, RUN_EXPORT_FORMAT, RUN_EXPORT_VERSION, type RunExport, type ImportOptions } from './bundle.js';
export { validateBundle } from './validate.js';
export { payloadOf } from './payload.js';
