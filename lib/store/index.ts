export type * from './records/index.js';
export type { Store, RunLock, RunStatusPatch, StepRange, DamagedRun } from './store.js';
export type { RecordKind, RecordLookup, RunField } from './records/kind.js';
export { MemoryStore } from './memory/store.js';
export { exportRun, importRun, RUN_EXPORT_FORMAT, RUN_EXPORT_VERSION, type RunExport, type ImportOptions } from './run-export.js';
export { validateBundle } from './records/validate.js';
export { payloadOf } from './records/payload.js';
