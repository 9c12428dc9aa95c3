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
      throw new ParseError(`${source} line ${i + 1} is not valid JSON${lineProblem((error as Error).message)}`, { cause: error });
    }
    items.push(validateDatasetItem(value, `${source} line ${i + 1}`));
  });
  if (items.length === 0) throw new ParseError(`${source} has no items; write one JSON object per line.`);
  return items;
}

/**
 * JSON.parse's message about one line, placed by its column on that line. The engines place it in
 * the text they were given, which is the line alone: V8 as "at position 15 (line 1 column 16)",
 * Firefox as "at line 1 column 16 of the JSON data", and a "line 1" next to the file's line number
 * reads as a contradiction.
 */
function lineProblem(message: string): string {
  const column = /column (\d+)/.exec(message)?.[1] ?? /at position (\d+)/.exec(message)?.[1]?.replace(/\d+/, (p) => String(Number(p) + 1));
  const what = message
    .replace(/^JSON\.parse: /, '')
    .replace(/ \(line \d+ column \d+\)/, '')
    .replace(/ (in JSON )?at position \d+/, '')
    .replace(/ at line \d+ column \d+ of the JSON data/, '');
  return `${column ? ` (at column ${column})` : ''}: ${what}`;
}
