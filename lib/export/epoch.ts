/**
 * Export after every epoch (seed 004's "export training data after each episode"): a hook the
 * training loop calls with the groups an epoch produced, appending their lines to a sink: a file in
 * Node (`jsonlFileSink` from `webgrpo/node`), or anything with `write`.
 */
import { toJsonl, type ExportGroup, type ToJsonlOptions } from './jsonl.js';

export interface JsonlSink {
  /** Appends text (whole lines) to the destination. */
  write(text: string): Promise<void>;
}

export interface EpochExport {
  /** The epoch that finished, counted from 1 as the training loop's events count it. */
  epoch: number;
  groups: readonly ExportGroup[];
}

/** Called by a training loop once per finished epoch. */
export type EpochHook = (epoch: EpochExport) => Promise<void>;

export function exportEveryEpoch(sink: JsonlSink, options: ToJsonlOptions = {}): EpochHook {
  return async ({ groups }) => {
    const text = toJsonl(groups, options);
    if (text) await sink.write(text);
  };
}
