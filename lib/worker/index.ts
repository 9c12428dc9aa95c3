export { createWorkerPolicy, type WorkerPolicyOptions } from './client.js';
export { exposePolicy, type PolicyFactory, type WorkerScope } from './expose.js';
export { exposeRuns, workerRun, type RunStarter, type RunWorker, type WorkerRun, type WorkerSideRun } from './runs.js';
