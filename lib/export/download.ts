/** Browser side of export: JSONL as a Blob, and a download the user sees. */
import { toJsonl, type ExportSource, type ToJsonlOptions } from './jsonl.js';

/** JSONL media type (the jsonlines.org convention). */
const JSONL_TYPE = 'application/jsonl';

/** The groups as JSONL (`toJsonl` with the same options) in a `Blob` of type `application/jsonl`, to save or upload. */
export function jsonlBlob(source: ExportSource, options: ToJsonlOptions = {}): Blob {
  return new Blob([toJsonl(source, options)], { type: JSONL_TYPE });
}

/** Saves the groups as a `.jsonl` file through the browser's download, without a server. */
export function downloadJsonl(source: ExportSource, options: ToJsonlOptions & { filename?: string } = {}): void {
  const { filename = 'webgrpo.jsonl', ...rest } = options;
  const url = URL.createObjectURL(jsonlBlob(source, rest));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.rel = 'noopener';
  link.click();
  // The click starts the download synchronously; the URL is only needed until then.
  setTimeout(() => URL.revokeObjectURL(url), 0);
}
