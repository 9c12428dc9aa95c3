/** A whole run as one value: what `exportRun` writes and `importRun` reads. */
import type { AdapterCheckpoint } from '../grad/format.js';
import type { DatasetItem } from '../core/dataset.js';
import type { ItemResult } from './item-result.js';
import type { RunRecord } from './run-record.js';
import type { StepRecord } from './step-record.js';

/** A whole run: what `exportRun` writes and `importRun` reads. */
export interface RunBundle {
  run: RunRecord;
  items: DatasetItem[];
  steps: StepRecord[];
  /** Finished items of the step in progress (not yet committed as a step). */
  pending: ItemResult[];
  /** Gradient and lora runs: the adapter checkpoint of the last committed step. */
  adapter?: AdapterCheckpoint;
}
