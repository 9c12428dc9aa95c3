/**
 * Export after every epoch (training data written out after each episode, as training goes on): a
 * hook the driver calls with the groups an epoch produced, appending their lines to a sink: a file in
 * Node (`jsonlFileSink` from `webgrpo/node`), or anything with `write`.
 */
import type { EpochHook } from '../run/groups.js';
import { toJsonl, type ToJsonlOptions } from './jsonl.js';

export interface JsonlSink {
  /** Appends text (whole lines) to the destination. */
  write(text: string): Promise<void>;
}

export type { EpochExport, EpochHook } from '../run/groups.js';

export function exportEveryEpoch(sink: JsonlSink, options: ToJsonlOptions = {}): EpochHook {
  return async ({ groups }) => {
    const text = toJsonl(groups, options);
    if (text) await sink.write(text);
  };
}
