/**
 * Applying a batch of experience operations to the library. Operations come from a critic model,
 * so every field is untrusted: the rules below turn any list into a valid library, deterministically
 * (the same library and operations always give the same result, byte for byte).
 *
 * Batch rules:
 *  - an UPDATE of an unknown (or missing) id becomes an ADD;
 *  - a DELETE wins over any UPDATE of the same id;
 *  - of several UPDATEs of one id the last wins;
 *  - ADDs whose text duplicates a surviving entry or an earlier ADD are merged into it;
 *  - DELETEs of unknown ids, unknown operation names and malformed fields are ignored and reported;
 *  - content is cleaned (one line, trimmed) and capped in length; an ADD or UPDATE without content
 *    is rejected.
 */
import type {
  AppliedOperation,
  ApplyResult,
  ExperienceEntry,
  ExperienceLibrary,
  ExperienceOperation,
  OperationKind,
  SkippedOperation,
} from './types.js';

/** Longest lesson kept, in characters, when `maxLength` is not given; longer content is cut. */
export const DEFAULT_MAX_EXPERIENCE_LENGTH = 400;

export interface ApplyOptions {
  /** The step the operations belong to (recorded on added and updated entries). */
  step: number;
  /** Longest lesson kept, in characters; longer content is cut. Default 400. */
  maxLength?: number;
}

const KIND_ALIASES: Record<string, OperationKind | 'MERGE'> = {
  add: 'ADD',
  insert: 'ADD',
  create: 'ADD',
  update: 'UPDATE',
  modify: 'UPDATE',
  edit: 'UPDATE',
  revise: 'UPDATE',
  replace: 'UPDATE',
  delete: 'DELETE',
  remove: 'DELETE',
  none: 'NONE',
  keep: 'NONE',
  noop: 'NONE',
  'no-op': 'NONE',
  skip: 'NONE',
  merge: 'MERGE',
};

export type NormalizedOperations = {
  operations: Array<{ index: number; operation: ExperienceOperation; raw: unknown }>;
  skipped: SkippedOperation[];
};

/**
 * Turns untrusted operation objects into `ExperienceOperation`s. Accepts our field names
 * (`operation`, `id`, `content`) and the paper's (`option`, `modified_from`, `experience`); a
 * paper-style `merge` (`merged_from: [ids], experience`) becomes an UPDATE of the first id plus
 * DELETEs of the others.
 */
export function normalizeOperations(raw: readonly unknown[]): NormalizedOperations {
  const operations: NormalizedOperations['operations'] = [];
  const skipped: SkippedOperation[] = [];
  raw.forEach((value, index) => {
    const result = normalizeOne(value);
    if (typeof result === 'string') skipped.push({ index, operation: value, reason: result });
    else for (const operation of result) operations.push({ index, operation, raw: value });
  });
  return { operations, skipped };
}

function normalizeOne(value: unknown): ExperienceOperation[] | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not an object';
  const record = value as Record<string, unknown>;
  const name = firstDefined(record, ['operation', 'option', 'op', 'action', 'type']);
  if (typeof name !== 'string') return 'missing operation name';
  const kind = KIND_ALIASES[name.trim().toLowerCase()];
  if (!kind) return `unknown operation "${truncateForReport(name)}"`;

  const content = firstDefined(record, ['content', 'experience', 'text', 'lesson']);
  if (content !== undefined && content !== null && typeof content !== 'string') return 'content is not a string';
  const text = typeof content === 'string' ? content : undefined;

  if (kind === 'MERGE') {
    const from = firstDefined(record, ['merged_from', 'mergedFrom', 'ids']);
    if (!Array.isArray(from) || from.length === 0) return 'merge without merged_from ids';
    const ids = from.map(normalizeId);
    if (ids.some((id) => id === undefined || id === null)) return 'merge with an invalid id';
    const [first, ...rest] = ids as string[];
    return [
      { operation: 'UPDATE', id: first, content: text },
      ...rest.map((id): ExperienceOperation => ({ operation: 'DELETE', id })),
    ];
  }

  const id = normalizeId(firstDefined(record, ['id', 'modified_from', 'target', 'target_id']));
  if (id === null) return 'id is not a string';
  const operation: ExperienceOperation = { operation: kind };
  if (id !== undefined) operation.id = id;
  if (text !== undefined) operation.content = text;
  return [operation];
}

function firstDefined(record: Record<string, unknown>, keys: string[]): unknown {
  for (const key of keys) if (record[key] !== undefined) return record[key];
  return undefined;
}

/** `"[g3]"`, `"G3"`, `3` and `"3"` all name `G3`; undefined when absent, null when malformed. */
export function normalizeId(value: unknown): string | undefined | null {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? `G${value}` : null;
  if (typeof value !== 'string') return null;
  const id = value.trim().replace(/^\[(.*)\]\.?$/, '$1').trim().toUpperCase();
  if (id === '') return undefined;
  if (/^\d+$/.test(id)) return `G${Number(id)}`;
  return id;
}

/**
 * One line, trimmed, without a leading `[G3]` label the critic may have echoed, capped at
 * `maxLength` characters (cut at a word boundary where one is near, marked with an ellipsis).
 * Collapsing newlines also keeps a lesson from forging extra `[Gn]` lines in the prompt.
 */
export function cleanContent(content: string, maxLength: number): { text: string; truncated: boolean } {
  let text = content
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^\[[A-Za-z]?\d+\]\.?\s*/, '')
    .trim();
  if (text.length <= maxLength) return { text, truncated: false };
  let cut = text.slice(0, Math.max(1, maxLength - 1));
  const space = cut.lastIndexOf(' ');
  if (space > maxLength * 0.6) cut = cut.slice(0, space);
  text = `${cut.trimEnd()}…`;
  return { text, truncated: true };
}

/** Key under which two lessons count as the same: case, spacing and end punctuation ignored. */
export function duplicateKey(text: string): string {
  return text
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/[\s.!;:,…]+$/u, '')
    .trim();
}

/** Applies a batch of operations under the rules above; the input library is not modified. */
export function applyOperations(
  library: ExperienceLibrary,
  rawOperations: readonly unknown[],
  options: ApplyOptions,
): ApplyResult {
  const maxLength = options.maxLength ?? DEFAULT_MAX_EXPERIENCE_LENGTH;
  const { operations, skipped } = normalizeOperations(rawOperations);
  const known = new Set(library.entries.map((entry) => entry.id));
  const report: Report = { applied: [], skipped };
  const deleted = deletions(operations, known, report);
  const { updates, adds } = updatesAndAdds(operations, known, deleted, maxLength, report);
  const entries = survivors(library.entries, deleted, updates, options.step, report);
  const nextId = appendAdds(entries, adds, library.nextId, options.step, report);
  report.applied.sort((a, b) => a.index - b.index);
  report.skipped.sort((a, b) => a.index - b.index);
  return {
    library: { nextId, entries, exemplars: library.exemplars.map((e) => ({ ...e })) },
    applied: report.applied,
    skipped: report.skipped,
  };
}

type Numbered = NormalizedOperations['operations'];
interface Report {
  applied: AppliedOperation[];
  skipped: SkippedOperation[];
}
interface Content {
  index: number;
  raw: unknown;
  text: string;
  truncated: boolean;
}

/** 1. DELETEs first: they win over UPDATEs of the same id whatever the order. The deleted ids, with their operation's index. */
function deletions(operations: Numbered, known: ReadonlySet<string>, report: Report): Map<string, number> {
  const deleted = new Map<string, number>();
  for (const { index, operation, raw } of operations) {
    if (operation.operation !== 'DELETE') continue;
    if (operation.id === undefined || !known.has(operation.id)) {
      report.skipped.push({ index, operation: raw, reason: `unknown id ${operation.id ?? '(none)'}` });
    } else if (deleted.has(operation.id)) {
      report.skipped.push({ index, operation: raw, reason: `${operation.id} is already deleted in this batch` });
    } else {
      deleted.set(operation.id, index);
    }
  }
  return deleted;
}

/** 2. UPDATEs of surviving ids: the last one per id wins; unknown ids turn into ADDs. */
function updatesAndAdds(
  operations: Numbered,
  known: ReadonlySet<string>,
  deleted: ReadonlyMap<string, number>,
  maxLength: number,
  report: Report,
): { updates: Map<string, Content>; adds: Array<Content & { converted: boolean }> } {
  const updates = new Map<string, Content>();
  const adds: Array<Content & { converted: boolean }> = [];
  for (const { index, operation, raw } of operations) {
    if (operation.operation === 'NONE') {
      report.skipped.push({ index, operation: raw, reason: 'NONE' });
      continue;
    }
    if (operation.operation !== 'ADD' && operation.operation !== 'UPDATE') continue;
    const { text, truncated } = cleanContent(operation.content ?? '', maxLength);
    if (text === '') {
      report.skipped.push({ index, operation: raw, reason: `${operation.operation} without content` });
      continue;
    }
    if (operation.operation === 'UPDATE' && operation.id !== undefined && known.has(operation.id)) {
      const id = operation.id;
      if (deleted.has(id)) {
        report.skipped.push({ index, operation: raw, reason: `${id} is deleted in this batch` });
        continue;
      }
      const earlier = updates.get(id);
      if (earlier) report.skipped.push({ index: earlier.index, operation: earlier.raw, reason: `a later UPDATE of ${id} wins` });
      updates.set(id, { index, raw, text, truncated });
    } else {
      adds.push({ index, raw, text, truncated, converted: operation.operation === 'UPDATE' });
    }
  }
  return { updates, adds };
}

/** 3. The surviving entries, in their original order, with updates applied. */
function survivors(
  entries: readonly ExperienceEntry[],
  deleted: ReadonlyMap<string, number>,
  updates: ReadonlyMap<string, Content>,
  step: number,
  report: Report,
): ExperienceEntry[] {
  const kept: ExperienceEntry[] = [];
  for (const entry of entries) {
    const deleteIndex = deleted.get(entry.id);
    if (deleteIndex !== undefined) {
      report.applied.push({ operation: 'DELETE', id: entry.id, previous: entry.text, index: deleteIndex });
      continue;
    }
    const update = updates.get(entry.id);
    if (update && update.text !== entry.text) {
      kept.push({ ...entry, text: update.text, updatedStep: step });
      report.applied.push({
        operation: 'UPDATE',
        id: entry.id,
        content: update.text,
        previous: entry.text,
        index: update.index,
        ...(update.truncated ? { truncated: true } : {}),
      });
    } else {
      if (update) report.skipped.push({ index: update.index, operation: update.raw, reason: `${entry.id} already says this` });
      kept.push({ ...entry });
    }
  }
  return kept;
}

/** 4. ADDs appended to `entries`, merged with any surviving entry or earlier ADD that says the same thing; returns the next id number. */
function appendAdds(entries: ExperienceEntry[], adds: ReadonlyArray<Content & { converted: boolean }>, firstId: number, step: number, report: Report): number {
  let nextId = firstId;
  const seen = new Map(entries.map((entry) => [duplicateKey(entry.text), entry.id]));
  for (const add of adds) {
    const key = duplicateKey(add.text);
    const same = seen.get(key);
    if (same !== undefined) {
      report.skipped.push({ index: add.index, operation: add.raw, reason: `duplicate of ${same}` });
      continue;
    }
    const id = `G${nextId++}`;
    seen.set(key, id);
    entries.push({ id, text: add.text, createdStep: step, updatedStep: step });
    report.applied.push({
      operation: 'ADD',
      id,
      content: add.text,
      index: add.index,
      ...(add.converted ? { convertedFrom: 'UPDATE' as const } : {}),
      ...(add.truncated ? { truncated: true } : {}),
    });
  }
  return nextId;
}

function truncateForReport(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
