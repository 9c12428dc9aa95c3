/**
 * What a held-out gain is worth (gain-baseline.ts), on the tasks' own held-out problems: one
 * constant reply's score, one format's where answers write the prompt's word, and whether the
 * trained replies collapsed onto one of them.
 */
import { describe, expect, it } from 'vitest';
import type { DatasetItem, EvaluationRecord } from '../../lib/index.js';
import { copyFormat, countLetter, namedFormat, sortWords } from '../../lib/tasks/index.js';
import { NAMED_FORMATS } from '../../lib/tasks/named-format.js';
import { baselineNote, gainBaseline } from '../../site/lib/gain-baseline.js';

/** An evaluation of `items` whose every reply is `reply(item)`, greedy beside it where `greedy`. */
function evaluation(items: DatasetItem[], reply: (item: DatasetItem, i: number) => string, greedy = true): EvaluationRecord {
  const pass = {
    summary: { items: items.length, samples: 1, temperature: greedy ? 0 : 1, greedy, rewardNames: ['exact'], meanReward: null, meanRewards: {}, accuracy: null, passAtK: {}, judged: items.length, usage: { promptTokens: 0, completionTokens: 0 } },
    items: items.map((item, index) => {
      const text = reply(item, index);
      return { index, prompt: { messages: item.messages! }, answer: item.answer, samples: [{ text, finishReason: 'eos' as const, rewards: [null], reward: null, correct: text === String(item.answer) }], meanReward: null, correct: null };
    }),
  };
  return { ...pass, epoch: 1, step: 1, evaluatedAt: '2026-01-01T00:00:00.000Z', ...(greedy ? { greedyPass: pass } : {}) };
}

const wordOf = (item: DatasetItem) => item.messages![0].content.slice(item.messages![0].content.lastIndexOf(': ') + 2);

describe('what a held-out gain is worth', () => {
  it('names one format for every word at named-format, and replies collapsed onto it', () => {
    const items = namedFormat.dataset({ size: 48, seed: 2027, split: 'heldout' });
    const base = evaluation(items, () => 'x');
    const trained = evaluation(items, (item) => `<${wordOf(item)}>`);
    const b = gainBaseline(base, trained)!;
    const shares = NAMED_FORMATS.map((f) => items.filter((i) => String(i.answer) === f.replaceAll('*', wordOf(i))).length);
    const best = Math.max(...shares);
    expect(b.oneFormat).toEqual({ format: NAMED_FORMATS[shares.indexOf(best)], share: best / 48 });
    expect(b.collapse).toEqual({ kind: 'format', what: '<*>', count: 48, of: 48 });
    expect(baselineNote(b)).toMatch(/^One constant reply \(“.+”\) scores \d+% on these prompts; one format for every word \(“.+”\), \d+%\. The trained model’s greedy replies collapsed to one format, “<\*>” \(48 of 48\): its exact match is about what that format scores, not a skill\.$/);
  });

  it('names a constant reply at count-letter, and replies collapsed onto it', () => {
    const items = countLetter.dataset({ size: 30, seed: 3, split: 'heldout' });
    const b = gainBaseline(evaluation(items, () => '2'), evaluation(items, (_, i) => (i < 25 ? '1' : '2')))!;
    const counts = ['1', '2', '3'].map((a) => items.filter((i) => String(i.answer) === a).length);
    expect(b.constant).toEqual({ reply: String(counts.indexOf(Math.max(...counts)) + 1), share: Math.max(...counts) / 30 });
    expect(b.oneFormat).toBeNull();
    expect(b.collapse).toEqual({ kind: 'reply', what: '1', count: 25, of: 30 });
  });

  it('says the replies did not collapse where each prompt got its own, and reads the samples without a greedy pass', () => {
    for (const task of [sortWords, copyFormat]) {
      const items = task.dataset({ size: 24, seed: 5, split: 'heldout' });
      const b = gainBaseline(evaluation(items, () => ''), evaluation(items, (item) => String(item.answer), false))!;
      expect(b.collapse, task.name).toBeNull();
      expect(b.replies).toBe('sampled');
      expect(baselineNote(b)).toMatch(/The trained model’s sampled replies did not collapse to one reply or one format\.$/);
    }
    // A run evaluated at temperature 0 has no greedy pass: its replies are greedy themselves.
    const greedyItems = sortWords.dataset({ size: 8, seed: 6, split: 'heldout' });
    const atZero = evaluation(greedyItems, (item) => String(item.answer), false);
    expect(gainBaseline(evaluation(greedyItems, () => ''), { ...atZero, summary: { ...atZero.summary, greedy: true } })!.replies).toBe('greedy');
    // Before any trained evaluation: only what one reply scores.
    const items = sortWords.dataset({ size: 8, seed: 5, split: 'heldout' });
    expect(baselineNote(gainBaseline(evaluation(items, () => ''), null)!)).toMatch(/^One constant reply \(“.+”\) scores 13% on these prompts\.$/);
  });
});
