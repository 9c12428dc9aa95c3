/**
 * BENCHMARKS.md opens with a summary table, one row per suite's section in the order the sections
 * appear, and every number a row's headline states is one its section has (the command's output and
 * the notes measured by hand after it): a rerun suite whose
 * numbers moved fails here until its summary row says what it now measures.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const benchmarks = readFileSync(new URL('../../BENCHMARKS.md', import.meta.url), 'utf8');
// A suite's section: what its command writes between its markers, and the notes measured by hand
// that follow it, up to the next suite's.
const sections = new Map([...benchmarks.matchAll(/<!-- bench:([\w-]+) -->([\s\S]*?)(?=<!-- bench:|$)/g)].map((m) => [m[1], m[2]]));
const summary = benchmarks.slice(benchmarks.indexOf('## Summary'), benchmarks.indexOf('<!-- bench:'));
const rows = [...summary.matchAll(/^\| `([\w-]+)` \| (.+?) \| (.+?) \|$/gm)].map((m) => ({ suite: m[1], measures: m[2], headline: m[3] }));

describe('the summary at the top of BENCHMARKS.md', () => {
  it('comes before every section and has one row per section, in their order', () => {
    expect(benchmarks.indexOf('## Summary')).toBeGreaterThan(0);
    expect(benchmarks.indexOf('## Summary')).toBeLessThan(benchmarks.indexOf('<!-- bench:'));
    expect(rows.map((r) => r.suite)).toEqual([...sections.keys()]);
  });

  it.each(rows)('$suite: every number of its headline is in its section', ({ suite, headline }) => {
    const numbers = headline.replace(/`[^`]*`/g, '').match(/\d+(\.\d+)?/g) ?? [];
    expect(numbers.length, headline).toBeGreaterThan(0);
    const body = sections.get(suite)!.replace(/,(\d{3})/g, '$1');
    expect(numbers.filter((n) => !body.includes(n)), headline).toEqual([]);
  });
});
