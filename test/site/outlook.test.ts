/**
 * The sentences before Start where a method was measured not to help (outlook.ts), read against
 * BENCHMARKS.md: every measurement's numbers are those of the row it names, a sentence appears only
 * for a combination (model, task, method) a benchmark ran, and every percentage a sentence quotes
 * is in the section it cites.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { builtinTasks } from '../../lib/tasks.js';
import { cannotHelp, MEASURED, measuredSentence, type Measurement } from '../../site/lib/outlook.js';
import { METHODS } from '../../site/lib/methods.js';

const benchmarks = readFileSync(new URL('../../BENCHMARKS.md', import.meta.url), 'utf8');

/** The text of a bench's section, or of one `###` table in it. */
function section(bench: string, table?: string): string {
  const body = benchmarks.slice(benchmarks.indexOf(`<!-- bench:${bench} -->`), benchmarks.indexOf(`<!-- /bench:${bench} -->`));
  expect(body.length, `BENCHMARKS has a ${bench} section`).toBeGreaterThan(0);
  if (!table) return body;
  const start = body.indexOf(`\n### ${table}\n`);
  expect(start, `${bench} has a table "${table}"`).toBeGreaterThan(0);
  const next = body.indexOf('\n### ', start + 5);
  return body.slice(start, next > 0 ? next : undefined);
}

/** The cells of the table row whose first cells are `row`. */
function cells(text: string, row: readonly string[]): string[] {
  const rows = text.split('\n').filter((l) => l.startsWith('|')).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
  const found = rows.filter((r) => row.every((cell, i) => r[i] === cell));
  expect(found, `one row ${row.join(' | ')}`).toHaveLength(1);
  return found[0];
}

/** Greedy and T=1 before/after as each bench's table lays them out. */
function measured(m: Measurement): { greedy: number[]; t1: number[] } {
  const text = section(m.bench, m.table);
  const num = (cell: string) => Number(cell);
  if (m.bench === 'methods') {
    const [, gb, ga, , tb, ta] = cells(text, m.row);
    return { greedy: [num(gb), num(ga)], t1: [num(tb), num(ta)] };
  }
  if (m.bench === 'skill') {
    const [, , gb, ga, tb, ta] = cells(text, m.row);
    return { greedy: [num(gb), num(ga)], t1: [num(tb), num(ta)] };
  }
  // skill-free: the base row is before, the library's row after.
  const base = cells(text, [m.row[0], 'base (no library)']);
  const after = cells(text, m.row);
  return { greedy: [num(base[3]), num(after[3])], t1: [num(base[4]), num(after[4])] };
}

const MODELS = ['skill', 'reader'];
const TASKS = Object.keys(builtinTasks);

describe('what a method cannot do on the model chosen, said before Start', () => {
  it('quotes each measurement as the benchmark row it names has it', () => {
    for (const m of MEASURED) expect(measured(m), `${m.model} ${m.task} ${m.method}`).toEqual({ greedy: [...m.greedy], t1: [...m.t1] });
  });

  it('says nothing for a combination no benchmark measured not to help', () => {
    const keyed = new Set(MEASURED.map((m) => `${m.model}/${m.task}/${m.method}`));
    for (const model of MODELS) {
      for (const task of TASKS) {
        for (const { id } of METHODS) {
          const note = cannotHelp(id, model, task, 1);
          // The reader's own notes: lessons at named-format (BENCHMARKS "exemplars"), libraries on tasks it was not taught.
          const readerNote = model === 'reader' && (id === 'lessons' || (id === 'exemplars' && task !== 'named-format'));
          if (!keyed.has(`${model}/${task}/${id}`) && !readerNote) expect(note, `${model} ${task} ${id}`).toBeNull();
        }
      }
    }
    // The cases: the router on copy-format gave the best result and cited other tasks; LoRA
    // and the head adapter at copy-format help; LoRA's sort-words recipe teaches (BENCHMARKS "teach").
    expect(cannotHelp('router', 'skill', 'copy-format')).toBeNull();
    expect(cannotHelp('lora', 'skill', 'copy-format')).toBeNull();
    expect(cannotHelp('gradient', 'skill', 'copy-format')).toBeNull();
    expect(cannotHelp('lora', 'skill', 'sort-words')).toBeNull();
    expect(cannotHelp('lora', 'skill', 'add-subtract')).toBe(
      'LoRA did not lift add-subtract on webgrpo-skill: held-out greedy exact match fell from 8% to 4%, T=1 fell from 7% to 4% (trained on the four skill tasks in turn; BENCHMARKS “skill”).',
    );
    expect(cannotHelp('router', 'skill', 'count-letter')).toBe(
      'The router did not lift count-letter on webgrpo-skill: held-out greedy exact match stayed at 37.5%, T=1 stayed at 33.3% (BENCHMARKS “methods”).',
    );
  });

  it('quotes only percentages the cited section holds', () => {
    const notes = MODELS.flatMap((model) => TASKS.flatMap((task) => METHODS.flatMap((m) => [0, 1].map((r) => cannotHelp(m.id, model, task, r)))));
    for (const note of notes.filter((n): n is string => n !== null)) {
      const cited = [...note.matchAll(/BENCHMARKS “([\w-]+)”|\(“([\w-]+)”\)/g)].map((c) => c[1] ?? c[2]);
      const text = cited.map((bench) => section(bench)).join('\n');
      for (const [, value] of note.matchAll(/(\d+(?:\.\d+)?)%/g)) expect(text, `${value}% of "${note}"`).toMatch(new RegExp(`(^|[^\\d.])${value.replace('.', '\\.')}(\\.0)?([^\\d]|$)`));
    }
  });

  it('says every method on the random-weight model shows mechanics only, and names nothing about a hub model', () => {
    for (const method of METHODS) expect(cannotHelp(method.id, 'tiny', 'digits')).toMatch(/^webgrpo-tiny has random weights.*mechanics/);
    for (const method of METHODS) expect(cannotHelp(method.id, 'smollm2-135m', 'copy-format')).toBeNull();
  });

  it('points exemplars on named-format to the reader, and says what the reader cannot do', () => {
    expect(cannotHelp('exemplars', 'skill', 'named-format')).toContain('webgrpo-reader');
    expect(cannotHelp('exemplars', 'skill', 'copy-format')).not.toContain('webgrpo-reader');
    expect(cannotHelp('exemplars', 'reader', 'named-format', 1)).toBeNull();
    expect(cannotHelp('exemplars', 'reader', 'named-format', 0)).toContain('Experiences per prompt to 1');
    expect(cannotHelp('exemplars', 'reader', 'sort-words', 1)).toContain('not measured');
    expect(cannotHelp('lessons', 'reader', 'named-format', 1)).toContain('does not copy the task’s code and format');
    expect(cannotHelp('lora', 'reader', 'named-format')).toBeNull();
  });

  it('keeps each note to one sentence', () => {
    const notes = [...MEASURED.map(measuredSentence), cannotHelp('exemplars', 'skill', 'named-format')!, cannotHelp('lessons', 'reader', 'named-format')!, cannotHelp('exemplars', 'reader', 'named-format')!, cannotHelp('exemplars', 'reader', 'sort-words')!, cannotHelp('router', 'tiny', 'digits')!];
    for (const note of notes) expect(note.replace(/\(.*?\)/g, '').match(/[.!?](\s|$)/g), note).toHaveLength(1);
  });
});
