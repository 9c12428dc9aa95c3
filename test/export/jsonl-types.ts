/**
 * The column types pyarrow's JSON reader (what `datasets.load_dataset('json')` uses) gives a JSON
 * Lines file, read from the text itself: `0` is int64 and `0.0` double, which `JSON.parse` cannot
 * tell apart. `datasets` concatenates files only when their columns' types are equal, so
 * `sameColumnTypes` checks a set of files the way it would: no column typed null (a column that
 * is null on every line of a file) and, per column, one type in every file. Within a file pyarrow
 * widens int64 to double and fills nulls, as the reader here does.
 */

const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const TAG = '\u0000number:';

/** One line with every number token turned into a tagged string keeping its text, then parsed. */
function parseKeepingNumbers(line: string): unknown {
  let out = '';
  for (let i = 0; i < line.length; ) {
    const c = line[i];
    if (c === '"') {
      let j = i + 1;
      while (line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
      out += line.slice(i, j + 1);
      i = j + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const token = NUMBER.exec(line)![0];
      out += JSON.stringify(TAG + token);
      i += token.length;
    } else {
      out += c;
      i++;
    }
  }
  return JSON.parse(out);
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'string') return value.startsWith(TAG) ? (/^-?\d+$/.test(value.slice(TAG.length)) ? 'int64' : 'double') : 'string';
  if (Array.isArray(value)) return `list<${value.map(typeOf).reduce(widen, 'null')}>`;
  const fields = Object.keys(value as object).sort().map((k) => `${k}:${typeOf((value as Record<string, unknown>)[k])}`);
  return `struct<${fields.join(',')}>`;
}

function widen(a: string, b: string): string {
  if (a === b || b === 'null') return a;
  if (a === 'null') return b;
  if ([a, b].sort().join() === 'double,int64') return 'double';
  if (a.startsWith('list<') && b.startsWith('list<')) return `list<${widen(a.slice(5, -1), b.slice(5, -1))}>`;
  throw new Error(`a column mixes ${a} and ${b}`);
}

/** The type of each column of one JSON Lines file, as pyarrow infers it. */
export function jsonlColumnTypes(text: string): Record<string, string> {
  const types: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const row = parseKeepingNumbers(line) as Record<string, unknown>;
    for (const [key, value] of Object.entries(row)) types[key] = widen(types[key] ?? 'null', typeOf(value));
  }
  return types;
}

/** Throws unless the files load as one dataset: no null-typed column, and every column typed alike in every file. */
export function sameColumnTypes(files: Record<string, string>): Record<string, string> {
  const all: Record<string, string> = {};
  for (const [name, text] of Object.entries(files)) {
    for (const [column, type] of Object.entries(jsonlColumnTypes(text))) {
      if (/(^|<|:)null(>|,|$)/.test(type)) throw new Error(`${name}: column ${column} is ${type}; pyarrow gives it a null type`);
      if (all[column] !== undefined && all[column] !== type) throw new Error(`${name}: column ${column} is ${type}, another file's is ${all[column]}`);
      all[column] = type;
    }
  }
  return all;
}
