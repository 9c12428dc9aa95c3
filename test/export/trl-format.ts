/**
 * What TRL's loaders require of a prompt-completion JSONL file, checked line by line. The rules
 * mirror `datasets`' JSON loader (pyarrow: one JSON object per line, one type per column across
 * all rows, null allowed anywhere) and trl/data_utils.py (`is_conversational`, and
 * `apply_chat_template`'s accepted key sets and last-prompt-role rule), read from TRL's source.
 */

export interface TrlFileInfo {
  format: 'standard' | 'conversational';
  columns: string[];
  rows: Record<string, unknown>[];
}

/** Keys TRL's `apply_chat_template` reads to decide the dataset type. */
const TYPE_KEYS = ['prompt', 'chosen', 'rejected', 'completion', 'messages', 'label'];
/** Columns TRL trainers treat specially; an extra column must not take one of these names. */
const RESERVED = ['input_ids', 'labels', 'completion_mask', 'assistant_masks', 'completion_ids', 'chat_template_kwargs', 'text', 'tools', 'images', 'conversations'];

export function checkTrlPromptCompletion(jsonl: string): TrlFileInfo {
  if (!jsonl.endsWith('\n')) throw new Error('a JSONL file ends with a newline');
  const lines = jsonl.slice(0, -1).split('\n');
  const rows = lines.map((line, i) => {
    if (/[\u2028\u2029]/.test(line)) throw new Error(`line ${i + 1}: raw U+2028/U+2029 would split the line for some readers`);
    const row: unknown = JSON.parse(line);
    if (row === null || typeof row !== 'object' || Array.isArray(row)) throw new Error(`line ${i + 1}: not a JSON object`);
    return row as Record<string, unknown>;
  });
  if (rows.length === 0) throw new Error('no rows');
  const columns = Object.keys(rows[0]).sort();
  const types = new Map<string, string>();
  rows.forEach((row, i) => {
    const keys = Object.keys(row).sort();
    if (keys.join() !== columns.join()) throw new Error(`line ${i + 1}: columns ${keys} differ from ${columns}`);
    for (const key of keys) {
      const type = arrowType(row[key]);
      if (type === 'null') continue;
      const seen = types.get(key);
      const merged = seen ? unify(seen, type) : type;
      if (merged === null) throw new Error(`line ${i + 1}: column ${key} is ${type} here but ${seen} before`);
      types.set(key, merged);
    }
  });
  const typeKeys = columns.filter((c) => TYPE_KEYS.includes(c));
  if (typeKeys.sort().join() !== 'completion,prompt') throw new Error(`TRL would read keys ${typeKeys} as another dataset type`);
  const reserved = columns.filter((c) => RESERVED.includes(c));
  if (reserved.length) throw new Error(`extra columns take names TRL reserves: ${reserved}`);

  const conversational = isConversational(rows[0]);
  rows.forEach((row, i) => {
    if (isConversational(row) !== conversational) throw new Error(`line ${i + 1}: format differs from line 1`);
    if (conversational) {
      for (const key of ['prompt', 'completion']) {
        const messages = row[key];
        if (!Array.isArray(messages) || messages.length === 0) throw new Error(`line ${i + 1}: ${key} is not a message list`);
        for (const m of messages) {
          if (typeof m?.role !== 'string' || typeof m?.content !== 'string') throw new Error(`line ${i + 1}: ${key} message without role/content`);
          if (!['system', 'user', 'assistant', 'tool'].includes(m.role)) throw new Error(`line ${i + 1}: role ${m.role}`);
        }
      }
      const last = (row.prompt as { role: string }[]).at(-1)!.role;
      if (!['user', 'tool', 'assistant'].includes(last)) throw new Error(`line ${i + 1}: invalid role in the last prompt message: ${last}`);
    } else if (typeof row.prompt !== 'string' || typeof row.completion !== 'string') {
      throw new Error(`line ${i + 1}: standard rows need string prompt and completion`);
    }
  });
  return { format: conversational ? 'conversational' : 'standard', columns, rows };
}

/** trl.data_utils.is_conversational: a type key holding a list whose first item is a dict with "role". */
function isConversational(row: Record<string, unknown>): boolean {
  const key = ['prompt', 'chosen', 'rejected', 'completion', 'messages'].find((k) => k in row);
  if (!key) return false;
  const value = row[key];
  return Array.isArray(value) && value[0] !== null && typeof value[0] === 'object' && 'role' in value[0];
}

/** The Arrow type pyarrow infers for a JSON value, as a string. */
function arrowType(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int64' : 'double';
  if (typeof value === 'string') return 'string';
  if (Array.isArray(value)) {
    let item = 'null';
    for (const v of value) {
      const t = arrowType(v);
      const merged = item === 'null' ? t : t === 'null' ? item : unify(item, t);
      if (merged === null) throw new Error(`mixed list item types ${item} and ${t}`);
      item = merged;
    }
    return `list<${item}>`;
  }
  const fields = Object.keys(value as object).sort().map((k) => `${k}:${arrowType((value as Record<string, unknown>)[k])}`);
  return `struct<${fields.join(',')}>`;
}

/** pyarrow promotes int64 to double and fills nulls; other mixes are errors. */
function unify(a: string, b: string): string | null {
  if (a === b) return a;
  const pair = [a, b].sort().join('|');
  if (pair === 'double|int64') return 'double';
  if (a === 'list<null>' && b.startsWith('list<')) return b;
  if (b === 'list<null>' && a.startsWith('list<')) return a;
  if (a.startsWith('list<') && b.startsWith('list<')) {
    const inner = unify(a.slice(5, -1), b.slice(5, -1));
    return inner && `list<${inner}>`;
  }
  return null;
}
