import { describe, expect, it } from 'vitest';
import type { Completion, DatasetItem } from '../../lib/index.js';
import { builtinTasks, getTask, namedFormat, splitOf } from '../../lib/tasks.js';
import { NAMED_FORMATS } from '../../lib/tasks/named-format.js';
import { FORMATS } from '../../lib/tasks/skill.js';
import { vocabulary } from '../../scripts/build-model/tokenizer.js';

const content = (item: DatasetItem) => item.messages![0].content as string;
const codeOf = (item: DatasetItem) => Number(/^wrap (\d+): \w+$/.exec(content(item))![1]);

describe('named-format', () => {
  it('is a built-in task', () => {
    expect(getTask('named-format')).toBe(namedFormat);
    expect(builtinTasks['named-format']).toBe(namedFormat);
  });

  it('names the format in the prompt but never shows it, and fixes it per code', () => {
    const formatOf = new Map<number, string>();
    for (const item of namedFormat.dataset({ size: 300, seed: 3, split: 'train' })) {
      const [, code, word] = /^wrap (\d+): (\w+)$/.exec(content(item))!;
      for (const c of '[]<>{}#-=') expect(content(item)).not.toContain(c);
      const format = (item.answer as string).replaceAll(word, '*');
      expect(formatOf.get(Number(code)) ?? format).toBe(format);
      formatOf.set(Number(code), format);
    }
    expect([...formatOf.keys()].sort()).toEqual(NAMED_FORMATS.map((_, i) => i + 1));
    // The formats are copy-format's: the skill model writes each when a prompt shows it.
    for (const format of NAMED_FORMATS) expect(FORMATS).toContain(format);
  });

  it('holds out new code-word pairs under codes the training split also asks', () => {
    const heldout = namedFormat.dataset({ size: 200, seed: 9 });
    const train = namedFormat.dataset({ size: 400, seed: 9, split: 'train' });
    expect(heldout.every((item) => splitOf(content(item)) === 'heldout')).toBe(true);
    const trainPrompts = new Set(train.map(content));
    expect(heldout.some((item) => trainPrompts.has(content(item)))).toBe(false);
    const trainCodes = new Set(train.map(codeOf));
    for (const code of heldout.map(codeOf)) expect(trainCodes.has(code)).toBe(true);
    expect(new Set(heldout.map(codeOf)).size).toBe(NAMED_FORMATS.length);
    expect(namedFormat.heldOut).toMatch(/^Held out: code-word pairs .+ Not held out: the codes and their formats/);
  });

  it('scores the exact reply 1, a near miss in between, and uses only the character tokenizer\'s characters', () => {
    const [item] = namedFormat.dataset({ size: 1, seed: 1 });
    const completion: Completion = { text: '', tokenIds: [], logprobs: [], finishReason: 'eos' };
    const score = (name: string, text: string) => namedFormat.rewards.find((r) => r.name === name)!.score({ text, completion, item, prompt: { prompt: '' }, row: 0 });
    expect(score('exact', ` ${item.answer as string} `)).toBe(1);
    const word = /: (\w+)$/.exec(content(item))![1];
    expect(score('exact', word)).toBe(0);
    expect(score('similarity', word) as number).toBeGreaterThan(0);
    expect(score('similarity', word) as number).toBeLessThan(1);
    const vocab = new Set(vocabulary(0));
    for (const i of namedFormat.dataset({ size: 100, seed: 2 })) for (const c of content(i) + (i.answer as string)) expect(vocab.has(c)).toBe(true);
  });
});
