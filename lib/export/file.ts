/** Node side of export: JSONL files, appended or written whole. */
import { appendFile, open, rename, rm } from 'node:fs/promises';
import { jsonlLines, type ExportSource, type ToJsonlOptions } from './jsonl.js';
import type { JsonlSink } from './epoch.js';

export interface JsonlFileSink extends JsonlSink {
  readonly path: string;
  /** Resolves when every write so far is on disk. */
  flush(): Promise<void>;
}

/**
 * Appends to `path` (created if missing). Writes happen one after another in call order, so lines
 * from concurrent writers never interleave mid-line. `truncate: true` empties the file on the first write.
 */
export function jsonlFileSink(path: string, options: { truncate?: boolean } = {}): JsonlFileSink {
  let truncate = options.truncate ?? false;
  let tail: Promise<void> = Promise.resolve();
  return {
    path,
    write(text: string) {
      const flag = truncate ? 'w' : 'a';
      truncate = false;
      const write = tail.then(() => appendFile(path, text, { encoding: 'utf8', flag }));
      tail = write.catch(() => undefined);
      return write;
    },
    flush: () => tail,
  };
}

/**
 * Writes every completion of `source` to `path`, streaming line by line into a temporary file that
 * replaces `path` only when complete: a failure half-way leaves an existing file untouched.
 * Returns the number of lines.
 */
export async function writeJsonlFile(path: string, source: ExportSource, options: ToJsonlOptions = {}): Promise<number> {
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
  const file = await open(temporary, 'w');
  let lines = 0;
  try {
    let chunk = '';
    for (const line of jsonlLines(source, options)) {
      chunk += line + '\n';
      lines++;
      if (chunk.length >= 1 << 16) {
        await file.write(chunk);
        chunk = '';
      }
    }
    if (chunk) await file.write(chunk);
    await file.sync();
  } catch (error) {
    await file.close();
    await rm(temporary, { force: true });
    throw error;
  }
  await file.close();
  await rename(temporary, path);
  return lines;
}
