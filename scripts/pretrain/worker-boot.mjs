// A worker thread runs plain JavaScript: this registers tsx's loader, then runs the TypeScript entry.
import { register } from 'tsx/esm/api';
import { workerData } from 'node:worker_threads';

register();
await import(workerData.entry);
