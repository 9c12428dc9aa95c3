/**
 * Where runs live, by concept:
 *  - store.ts: the `Store` interface and the guarantees every implementation gives;
 *  - records/: what a run stores (run, item, step, evaluation, bundle, session records; the
 *    `RecordKind` a method hands over), the checks of what comes from outside (validate.ts) and
 *    the v4 steps' upgrade; the methods' own parts are declared in their record.ts (run.ts says how);
 *  - rules.ts: what every store does alike (order, errors, the run lock's hold, damage, flush);
 *  - checksum.ts and integrity.ts: the persistent stores' checksums and read-back checks;
 *  - run-export.ts: a whole run as one JSON document (export, import);
 *  - memory/, file/ (`webgrpo/node`), idb/ (`webgrpo/idb`): one folder per backend, each with
 *    its run store (store.ts) and its ask/tell session store (groups.ts).
 */
export type * from './records/index.js';
export type { Store, RunLock, RunStatusPatch, StepRange, DamagedRun } from './store.js';
export type { RecordKind, RecordLookup, RunField } from './records/kind.js';
export { MemoryStore } from './memory/store.js';
export { exportRun, importRun, RUN_EXPORT_FORMAT, RUN_EXPORT_VERSION, type RunExport, type ImportOptions } from './run-export.js';
export { validateBundle } from './records/validate.js';
export { payloadOf } from './records/step.js';
