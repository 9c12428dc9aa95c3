/**
 * The verl reward files shipped in python/webgrpo_rewards/ give the numbers webgrpo's own rewards
 * (lib/tasks) give on the same replies: every built-in task, its dataset's items with the ground
 * truth as `exportParquet` writes it, replies right, near and far (whitespace of every kind JS
 * knows, emoji, fenced and broken JSON, NaN), and items without an answer. The files are loaded
 * as verl loads them (by path, `compute_score` called with verl's keyword arguments) by
 * /usr/bin/python3 where it is present; elsewhere the suite skips, and says so.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Completion } from '../../lib/core/policy.js';
import type { DatasetItem } from '../../lib/core/dataset.js';
import { groundTruth } from '../../lib/export/item.js';
import { combinedRewards } from '../../lib/math/advantages.js';
import { builtinTasks } from '../../lib/tasks/index.js';
import type { Task } from '../../lib/tasks/types.js';

const PYTHON = '/usr/bin/python3';
const FOLDER = join(import.meta.dirname, '../../python/webgrpo_rewards');
const fileOf = (task: string) => join(FOLDER, `${task.replaceAll('-', '_')}.py`);

const NOISE = [
  '', '   ', 'a', 'HELLO', 'Sorted: apple, banana', 'Sorted: apple,banana', '42', '-7.5 and 12', '٣ ٤', '3 + 4 = 7.', 'The answer is 0.',
  '```json\n{"name": "Tom", "legs": 4, "sound": "meow"}\n```', '{"name": "x", "legs": "4", "toString": 1}', '{"title": true, "pages": 1e3}',
  '{"a": NaN}', '[1, 2]', 'null', '{"name": "x"', 'x😀y 😀', 'ÄÖÜ straße İ', '\u00a0Sorted:\u2003apple,\u3000zinc\ufeff', 'line\u2028two', 'Sorted:\tapple,\t zinc\t', '\t42\v',
  'The wave and salt meet the horizon.', 'One. Two.', 'wave, salt, gull!', 'shelf dust atlas', 'cat fig owl', '[owl]', '#owl#', '3', '2',
];

/** Replies built from an item's answer: right, padded, cased, cut, extended. */
function repliesFor(item: DatasetItem): string[] {
  const truth = groundTruth(item.answer);
  const out = [truth, `  ${truth}\n`, truth.toUpperCase(), truth.slice(0, -1), `${truth}!`, `x ${truth}`];
  const answer = item.answer as { keys?: Record<string, string> } | string[] | number | undefined;
  if (typeof answer === 'number') out.push(`${answer + 1}`, `It is ${answer}.`, `${answer}.0`);
  if (Array.isArray(answer)) out.push(`A line with ${answer.join(' and ')}.`, `${answer.join(', ')}. More.`);
  if (answer && typeof answer === 'object' && !Array.isArray(answer) && answer.keys) {
    const sample = { string: 'x', number: 3, boolean: true } as Record<string, unknown>;
    const object = Object.fromEntries(Object.entries(answer.keys).map(([k, t]) => [k, sample[t]]));
    out.push(JSON.stringify(object), '```json\n' + JSON.stringify({ ...object, extra: 1 }) + '\n```', JSON.stringify(Object.fromEntries(Object.keys(object).map((k) => [k, null]))));
  }
  return out;
}

async function jsScore(task: Task, item: DatasetItem, text: string): Promise<number | null> {
  const completion = { text, tokenIds: [], logprobs: [], finishReason: 'stop' } as unknown as Completion;
  const scores = await Promise.all(task.rewards.map((r) => r.score({ text, completion, item, prompt: item, row: 0 })));
  const [combined] = combinedRewards([scores], task.rewards.map((r) => r.weight ?? 1));
  return Number.isNaN(combined) ? null : combined;
}

function runPython(cases: unknown[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(PYTHON, [join(import.meta.dirname, 'verl-reward.py')], { input: JSON.stringify(cases), encoding: 'utf8', maxBuffer: 64 << 20, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe.skipIf(!existsSync(PYTHON))('the verl reward files (python/webgrpo_rewards)', () => {
  it('score every built-in task\'s replies as its JS rewards do, each file alone and through webgrpo.py', async () => {
    const cases: Array<{ path: string; data_source: string; solution_str: string; ground_truth: string; extra_info: unknown; expected: number | null }> = [];
    for (const task of Object.values(builtinTasks)) {
      expect(existsSync(fileOf(task.name)), `python/webgrpo_rewards has no file for ${task.name}`).toBe(true);
      const items = task.dataset({ size: 4, seed: 3 });
      // An item without its answer: webgrpo leaves the reply unscored where a reward needs it.
      const unanswered = { ...items[0], answer: undefined };
      for (const item of [...items, unanswered]) {
        for (const text of [...repliesFor(item), ...NOISE]) {
          const expected = await jsScore(task, item, text);
          const base = { data_source: task.name, solution_str: text, ground_truth: groundTruth(item.answer), extra_info: { index: 0, split: 'train' }, expected };
          cases.push({ ...base, path: fileOf(task.name) }, { ...base, path: join(FOLDER, 'webgrpo.py') });
        }
      }
    }
    const { status, stdout, stderr } = runPython(cases);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    const scores = JSON.parse(stdout) as number[];
    expect(scores).toHaveLength(cases.length);
    const wrong = cases.flatMap((c, i) => {
      // verl needs a number: an unscored reply is 0.0 there.
      const want = c.expected ?? 0;
      return Math.abs(scores[i] - want) <= 1e-12 ? [] : [`${c.data_source} ${JSON.stringify(c.solution_str)} vs ${JSON.stringify(c.ground_truth)}: python ${scores[i]}, js ${c.expected}`];
    });
    expect(wrong).toEqual([]);
    // The replies reach both ends of the rewards, so a file that always answered 0 would fail.
    expect(cases.some((c) => c.expected === 0) && cases.some((c) => (c.expected ?? 0) >= 1)).toBe(true);
    expect(cases.some((c) => c.expected === null)).toBe(true);
  });

  it('refuses a data source that is no built-in task, naming what to do', () => {
    const { status, stderr } = runPython([{ path: join(FOLDER, 'webgrpo.py'), data_source: 'webgrpo', solution_str: 'x', ground_truth: 'x', extra_info: null }]);
    expect(status).not.toBe(0);
    expect(stderr).toMatch(/NotImplementedError: webgrpo has no built-in task 'webgrpo'; give exportParquet a dataSource/);
  });
});
