import { ParseError } from '../errors.js';
import type { DatasetItem } from '../core/dataset.js';
import { validateDatasetItem } from '../core/dataset.js';

/**
 * A dataset from JSONL text: one `{ "prompt" | "messages", "answer"? }` object per line; blank lines
 * are skipped. Errors name the line.
 */
export function parseDatasetJsonl(text: string, source = 'dataset'): DatasetItem[] {
  const items: DatasetItem[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new ParseError(`${source} line ${i + 1} is not valid JSON: ${(error as Error).message}`, { cause: error });
    }
    items.push(validateDatasetItem(value, `${source} line ${i + 1}`));
  });
  if (items.length === 0) throw new ParseError(`${source} has no items; write one JSON object per line.`);
  return items;
}
