export { createWorkerPolicy, type WorkerPolicyOptions } from './client.js';
export { exposePolicy, type PolicyFactory, type WorkerScope } from './expose.js';
