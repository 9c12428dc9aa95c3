import { describe, expect, it } from 'vitest';
import {
  InvalidInputError,
  ParseError,
  type Completion,
  type DatasetItem,
  type RewardFunction,
} from '../../lib/index.js';
import { builtinRewards, builtinTasks, getTask, parseDatasetJsonl } from '../../lib/tasks.js';
import { validateDataset } from '../../lib/method.js';
import { alphabetise, arithmetic, firstLetter, jsonFormat, keywords } from '../../lib/tasks/index.js';
import { alphabetiseAnswer } from '../../lib/tasks/alphabetise.js';
import { editDistance } from '../../lib/tasks/text.js';

function score(reward: RewardFunction, text: string, item: DatasetItem) {
  const completion: Completion = { text, tokenIds: [], logprobs: [], finishReason: 'eos' };
  return reward.score({ text, completion, item, prompt: { prompt: '' }, row: 0 });
}
const byName = (rewards: RewardFunction[], name: string) => rewards.find((r) => r.name === name) as RewardFunction;

describe('built-in tasks', () => {
  it('generate small, valid, seeded datasets', () => {
    expect(Object.keys(builtinTasks)).toEqual(['alphabetise', 'arithmetic', 'json-format', 'keywords', 'digits', 'shout', 'first-letter', 'add-subtract', 'sort-words', 'count-letter', 'copy-format', 'named-format']);
    for (const task of Object.values(builtinTasks)) {
      const items = task.dataset({ seed: 3 });
      expect(validateDataset(items)).toEqual(items);
      expect(task.dataset({ seed: 3 })).toEqual(items);
      expect(task.dataset({ seed: 4 })).not.toEqual(items);
      expect(task.dataset({ size: 2 })).toHaveLength(2);
    }
    expect(() => getTask('chess')).toThrow(InvalidInputError);
  });

  it('alphabetise rewards the exact format, with partial credit', async () => {
    const [item] = alphabetise.dataset({ size: 1, seed: 9 });
    const answer = item.answer as string;
    expect(answer).toBe(alphabetiseAnswer(answer.slice('Sorted: '.length).split(', ').reverse()));
    const rewards = alphabetise.rewards;
    expect(await score(byName(rewards, 'exact'), `  ${answer}\n`, item)).toBe(1);
    expect(await score(byName(rewards, 'exact'), answer.toLowerCase(), item)).toBe(0);
    expect(await score(byName(rewards, 'format'), 'Sorted: zebra, apple', item)).toBe(answer.split(', ').length === 2 ? 1 : 0.5);
    expect(await score(byName(rewards, 'format'), 'zebra apple', item)).toBe(0);
    const close = (await score(byName(rewards, 'similarity'), answer.slice(0, -2), item)) as number;
    expect(close).toBeGreaterThan(0.8);
    expect(close).toBeLessThan(1);
    expect(await score(byName(rewards, 'exact'), answer, { prompt: 'no answer' })).toBeNull();
  });

  it('first-letter asks for the first letter of a word and scores each character of the reply', async () => {
    const items = firstLetter.dataset({ size: 40, seed: 2 });
    for (const item of items) {
      const word = /^First letter of (\w+):$/.exec(item.messages![0].content)![1];
      expect(item.answer).toBe(word[0]);
    }
    // The right letter differs with the prompt: no fixed reply is right for most items.
    expect(new Set(items.map((i) => i.answer)).size).toBeGreaterThan(15);
    const [reward] = firstLetter.rewards;
    const tiger: DatasetItem = { prompt: 'First letter of tiger:', answer: 't' };
    expect(await score(reward, 'tttt', tiger)).toBe(1);
    expect(await score(reward, 'Tt x', tiger)).toBe(0.5);
    expect(await score(reward, 'apple', tiger)).toBe(0);
    expect(await score(reward, '', tiger)).toBe(0);
    expect(await score(reward, 't', { prompt: 'no answer' })).toBeNull();
  });

  it('arithmetic, json-format and keywords score what they say', async () => {
    const sum: DatasetItem = { prompt: 'What is 2 + 3?', answer: 5 };
    expect(await score(byName(arithmetic.rewards, 'correct'), 'It is 5', sum)).toBe(1);
    expect(await score(byName(arithmetic.rewards, 'close'), '4', sum)).toBeCloseTo(0.8);
    expect(await score(byName(arithmetic.rewards, 'close'), 'no idea', sum)).toBe(0);
    expect(await score(byName(arithmetic.rewards, 'number_only'), ' 5 ', sum)).toBe(1);

    const cat: DatasetItem = { prompt: 'cat', answer: { keys: { name: 'string', legs: 'number' } } };
    expect(await score(byName(jsonFormat.rewards, 'valid_json'), '```json\n{"name": "Tom", "legs": 4}\n```', cat)).toBe(1);
    expect(await score(byName(jsonFormat.rewards, 'schema'), '{"name": "Tom", "legs": "four"}', cat)).toBe(0.5);
    expect(await score(byName(jsonFormat.rewards, 'schema'), '{"name": "Tom", "legs": 4, "tail": true}', cat)).toBe(0.5);
    expect(await score(byName(jsonFormat.rewards, 'keys_named'), 'use "name" please', cat)).toBe(0.5);

    const sea: DatasetItem = { prompt: 'sea', answer: ['wave', 'salt', 'gull'] };
    expect(await score(byName(keywords.rewards, 'keywords'), 'A gull rides the salty wave.', sea)).toBeCloseTo(2 / 3);
    expect(await score(byName(keywords.rewards, 'one_sentence'), 'One. Two.', sea)).toBe(0);
    expect(await score(byName(keywords.rewards, 'one_sentence'), 'Just one sentence here.', sea)).toBe(1);
  });

  it('general rewards compare with the answer, or cannot score without one', async () => {
    const item: DatasetItem = { prompt: 'capital of France?', answer: 'Paris' };
    expect(await score(builtinRewards.exact, ' paris ', item)).toBe(1);
    expect(await score(builtinRewards.contains, 'It is Paris.', item)).toBe(1);
    expect(await score(builtinRewards.similarity, 'Pariss', item)).toBeCloseTo(5 / 6);
    expect(await score(builtinRewards.number, '42', { prompt: 'x', answer: '42' })).toBe(1);
    expect(await score(builtinRewards.json, '[1]', item)).toBe(1);
    expect(await score(builtinRewards.exact, 'x', { prompt: 'x' })).toBeNull();
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });
});

describe('parseDatasetJsonl', () => {
  it('reads one item per line and names the bad line', () => {
    expect(parseDatasetJsonl('{"prompt": "a", "answer": 1}\n\n{"messages": [{"role": "user", "content": "b"}]}\n')).toEqual([
      { prompt: 'a', answer: 1 },
      { messages: [{ role: 'user', content: 'b' }] },
    ]);
    expect(() => parseDatasetJsonl('{"prompt": "a"}\n{oops', 'data.jsonl')).toThrow(/data.jsonl line 2 is not valid JSON/);
    // The place is a column of the file's line, never the parser's "line 1" of the line alone.
    expect(() => parseDatasetJsonl('{"prompt": "a"}\n{"prompt": "b" "answer": 1}', 'data.jsonl')).toThrow(/^data.jsonl line 2 is not valid JSON \(at column 16\): Expected ',' or '}' after property value$/);
    expect(() => parseDatasetJsonl('{"prompt": "a"}\n{"answer": 3}', 'data.jsonl')).toThrow(/data.jsonl line 2: give exactly one of/);
    expect(() => parseDatasetJsonl('\n')).toThrow(ParseError);
  });
});
