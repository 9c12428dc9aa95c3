import { describe, expect, it } from 'vitest';
import { InvalidInputError, type Completion, type DatasetItem, type RewardFunction } from '../../lib/index.js';
import { skillTasks, splitOf } from '../../lib/tasks.js';
import { addSubtract, copyFormat, countLetter, sortWords } from '../../lib/tasks/index.js';
import { COUNT_ANSWERS } from '../../lib/tasks/skill.js';
import { vocabulary } from '../../scripts/build-model/tokenizer.js';

function score(reward: RewardFunction, text: string, item: DatasetItem) {
  const completion: Completion = { text, tokenIds: [], logprobs: [], finishReason: 'eos' };
  return reward.score({ text, completion, item, prompt: { prompt: '' }, row: 0 });
}
const reward = (task: (typeof skillTasks)[number], name: string) => task.rewards.find((r) => r.name === name)!;
const content = (item: DatasetItem) => item.messages![0].content as string;

describe('skill tasks', () => {
  it('draw held-out problems by default and training problems on request, never mixing them', () => {
    for (const task of skillTasks) {
      const heldout = task.dataset({ size: 200, seed: 5 });
      const train = task.dataset({ size: 200, seed: 5, split: 'train' });
      expect(heldout.every((item) => splitOf(content(item)) === 'heldout')).toBe(true);
      expect(train.every((item) => splitOf(content(item)) === 'train')).toBe(true);
      const trainPrompts = new Set(train.map(content));
      expect(heldout.some((item) => trainPrompts.has(content(item)))).toBe(false);
      expect(task.dataset({ size: 20, seed: 5 })).toEqual(heldout.slice(0, 20));
      expect(task.dataset({ size: 20, seed: 6 })).not.toEqual(heldout.slice(0, 20));
      expect(() => task.dataset({ split: 'test' as 'train' })).toThrow(InvalidInputError);
    }
  });

  it('hold out about one problem in five', () => {
    const prompts = Array.from({ length: 5000 }, (_, i) => `${i}+${i * 7}=`);
    const share = prompts.filter((p) => splitOf(p) === 'heldout').length / prompts.length;
    expect(share).toBeGreaterThan(0.17);
    expect(share).toBeLessThan(0.23);
  });

  it('use only characters the character tokenizer has', () => {
    const vocab = new Set(vocabulary(0));
    for (const task of skillTasks) {
      for (const split of ['heldout', 'train'] as const) {
        for (const item of task.dataset({ size: 300, seed: 1, split })) {
          for (const c of content(item) + (item.answer as string)) expect(vocab.has(c), `${task.name}: ${JSON.stringify(c)}`).toBe(true);
        }
      }
    }
  });

  it('have correct answers', () => {
    for (const item of addSubtract.dataset({ size: 50, seed: 2, split: 'train' })) {
      const [, a, op, b] = /^(\d\d)([+-])(\d\d)=$/.exec(content(item))!;
      expect(Number(item.answer)).toBe(op === '+' ? Number(a) + Number(b) : Number(a) - Number(b));
      expect(Number(item.answer)).toBeGreaterThanOrEqual(0);
    }
    for (const item of sortWords.dataset({ size: 50, seed: 2 })) {
      const words = content(item).slice('sort: '.length).split(' ');
      expect([3, 4]).toContain(words.length);
      expect(item.answer).toBe([...words].sort().join(' '));
    }
    for (const item of countLetter.dataset({ size: 50, seed: 2 })) {
      const [, letter, word] = /^count (\w): (\w+)$/.exec(content(item))!;
      expect(Number(item.answer)).toBe(word.split(letter).length - 1);
    }
    const [format] = copyFormat.dataset({ size: 1, seed: 3 });
    const [, pattern, word] = /^format (\S+): (\w+)$/.exec(content(format))!;
    expect(format.answer).toBe(pattern.replaceAll('*', word));
  });

  it('score exact matches 1 and give partial credit to near misses only', () => {
    const [sum] = addSubtract.dataset({ size: 1, seed: 4 });
    const answer = Number(sum.answer);
    expect(score(reward(addSubtract, 'exact'), ` ${answer} `, sum)).toBe(1);
    expect(score(reward(addSubtract, 'exact'), `${answer + 1}`, sum)).toBe(0);
    const near = score(reward(addSubtract, 'close'), `${answer + 1}`, sum) as number;
    const far = score(reward(addSubtract, 'close'), `${answer + 60}`, sum) as number;
    expect(near).toBeGreaterThan(far);
    expect(score(reward(addSubtract, 'close'), 'no idea', sum)).toBe(0);

    const [sorted] = sortWords.dataset({ size: 1, seed: 4 });
    expect(score(reward(sortWords, 'exact'), sorted.answer as string, sorted)).toBe(1);
    const reversed = (sorted.answer as string).split(' ').reverse().join(' ');
    expect(score(reward(sortWords, 'exact'), reversed, sorted)).toBe(0);
    expect(score(reward(sortWords, 'similarity'), reversed, sorted)).toBeGreaterThan(score(reward(sortWords, 'similarity'), 'zzz', sorted) as number);
    expect(score(reward(countLetter, 'exact'), '7', { answer: 7 })).toBeNull();
  });

  it('leave count-letter no constant answer that scores above chance on the held-out split', () => {
    const items = countLetter.dataset({ size: 600, seed: 11 });
    const exactReward = reward(countLetter, 'exact');
    const chance = 1 / COUNT_ANSWERS.length;
    // Every reply a constant policy could write that the exact reward could accept: the digits 0-9.
    const best = Math.max(...Array.from({ length: 10 }, (_, n) => items.filter((item) => score(exactReward, String(n), item) === 1).length / items.length));
    expect(best).toBeGreaterThan(chance - 0.05);
    expect(best).toBeLessThan(chance + 0.05);
    // Exact match is its only reward: no partial credit that a constant middle answer could collect.
    expect(countLetter.rewards.map((r) => r.name)).toEqual(['exact']);
    // Each answer has more than one held-out problem, so a run cannot memorise one prompt per answer.
    for (const answer of COUNT_ANSWERS) expect(new Set(items.filter((i) => i.answer === String(answer)).map(content)).size, `answer ${answer}`).toBeGreaterThan(2);
  });

  it('say on their card what the held-out split holds out', () => {
    for (const task of skillTasks) expect(task.heldOut).toMatch(/^Held out: .+ Not held out: .+/);
  });
});
