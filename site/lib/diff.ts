/**
 * What one step did to the experience library, entry by entry: the library after the step, each
 * entry marked added, updated or unchanged against the library before it, and the entries the step
 * deleted (kept, so the UI can show them struck through).
 */
import type { ExperienceLibrary } from '../../lib/index.js';

export type DiffStatus = 'added' | 'updated' | 'deleted' | 'same';

export interface DiffRow {
  id: string;
  kind: 'lesson' | 'exemplar';
  status: DiffStatus;
  /** The lesson text, or the exemplar's output. */
  text: string;
  /** Before an update, or the deleted text. */
  previous?: string;
  /** Exemplars: the task the output answered, and its reward. */
  item?: string;
  score?: number;
}

interface Flat {
  id: string;
  kind: DiffRow['kind'];
  text: string;
  item?: string;
  score?: number;
}

function flatten(library: ExperienceLibrary): Flat[] {
  return [
    ...library.entries.map((e): Flat => ({ id: e.id, kind: 'lesson', text: e.text })),
    ...library.exemplars.map((e): Flat => ({ id: e.id, kind: 'exemplar', text: e.output, item: e.item, score: e.score })),
  ];
}

/** Rows in the order of `after`, then the deleted entries in their old order. */
export function diffLibraries(before: ExperienceLibrary, after: ExperienceLibrary): DiffRow[] {
  const old = new Map(flatten(before).map((e) => [e.id, e]));
  const now = flatten(after);
  const kept = new Set(now.map((e) => e.id));
  const rows: DiffRow[] = now.map((e) => {
    const prior = old.get(e.id);
    const status: DiffStatus = !prior ? 'added' : prior.text !== e.text || prior.score !== e.score ? 'updated' : 'same';
    return { ...e, status, ...(status === 'updated' && prior ? { previous: prior.text } : {}) };
  });
  for (const e of old.values()) if (!kept.has(e.id)) rows.push({ ...e, status: 'deleted', previous: e.text });
  return rows;
}

export function countDiff(rows: readonly DiffRow[]): Record<Exclude<DiffStatus, 'same'>, number> {
  const count = (status: DiffStatus) => rows.filter((r) => r.status === status).length;
  return { added: count('added'), updated: count('updated'), deleted: count('deleted') };
}
