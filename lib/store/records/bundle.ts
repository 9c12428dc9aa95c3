/** A whole run as one value: what `exportRun` writes and `importRun` reads. */
import type { DatasetItem } from '../../core/dataset.js';
import type { ItemResult } from './item.js';
import type { RunRecord, StoredCheckpoint } from './run.js';
import type { StepRecord } from './step.js';

/** A whole run: what `exportRun` writes and `importRun` reads. */
export interface RunBundle {
  run: RunRecord;
  items: DatasetItem[];
  steps: StepRecord[];
  /** Finished items of the step in progress (not yet committed as a step). */
  pending: ItemResult[];
  /** Runs whose kind keeps an adapter: the checkpoint of the last committed step. */
  adapter?: StoredCheckpoint;
}
