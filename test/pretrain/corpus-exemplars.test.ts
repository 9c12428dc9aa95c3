/**
 * The opt-in reading corpus: seeded, the configured share of reading chats, each in the exemplars
 * template a Training-Free run renders, under a verb that is never named-format's "wrap", with a
 * reply that is the shown format of its code whenever a worked example shares that code.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_EXEMPLARS_TEMPLATE } from '../../lib/experience/render.js';
import { mulberry32 } from '../../lib/math/random.js';
import { FORMATS } from '../../lib/tasks/skill.js';
import { buildExemplarCorpus, EXEMPLAR_CONTINUE, readingChat } from '../../scripts/pretrain/corpus-exemplars.js';

const config = { ...EXEMPLAR_CONTINUE, steps: 20, batch: 16, lessons: { ...EXEMPLAR_CONTINUE.lessons, reading: 10, groups: 2 } };
const [preamble, rest] = DEFAULT_EXEMPLARS_TEMPLATE.split('{{experiences}}');
const suffix = rest.replace('{{prompt}}', '');

/** A word's format: the reply with the word replaced by `*`. */
const formatOf = (reply: string, word: string) => reply.replace(new RegExp(word, 'g'), '*');

describe('the reading corpus', () => {
  it('is seeded, has the configured size, share of reading chats and lessons corpus', async () => {
    const corpus = await buildExemplarCorpus(config);
    expect(await buildExemplarCorpus(config)).toEqual(corpus);
    expect(corpus).toHaveLength(config.steps * config.batch);
    const reading = corpus.filter((e) => e.task === 'reading').length / corpus.length;
    expect(Math.abs(reading - config.readingShare)).toBeLessThan(0.01);
    expect(corpus.filter((e) => e.task === 'lesson-reading')).toHaveLength(10);
    expect(corpus.filter((e) => e.task === 'critic-critique')).toHaveLength(2);
    await expect(buildExemplarCorpus({ ...config, lessons: { ...config.lessons, reading: 400 } })).rejects.toThrow(/exceed the 320/);
  });

  it('renders worked examples as the exemplars template does and answers with the shown format of the code', () => {
    const random = mulberry32(5);
    let matched = 0;
    let bare = 0;
    for (let i = 0; i < 400; i++) {
      const { prompt, reply } = readingChat(config, random);
      const [verb, code, word] = /^(\w+) (\d+): (\w+)$/.exec(prompt.slice(prompt.lastIndexOf('\n') + 1))!.slice(1);
      expect(verb).not.toBe('wrap');
      expect(FORMATS).toContain(formatOf(reply, word));
      if (!prompt.startsWith(preamble)) {
        expect(prompt).toBe(`${verb} ${code}: ${word}`);
        bare++;
        continue;
      }
      const body = prompt.slice(preamble.length, prompt.lastIndexOf(suffix));
      const blocks = body.split('\n\n').map((block) => /^\[E\d+\] Task: (\w+) (\d+): (\w+)\nAnswer: (.+)$/.exec(block)!);
      expect(blocks.length).toBeLessThanOrEqual(config.maxExemplars);
      const same = blocks.filter((m) => m[1] === verb && m[2] === code);
      expect(blocks.every((m) => m[1] === verb)).toBe(true);
      for (const m of same) expect(formatOf(m[4], m[3])).toBe(formatOf(reply, word));
      // The other examples come from at most `distractorCodes` codes, so one code is often shown several times.
      expect(new Set(blocks.filter((m) => m[2] !== code).map((m) => m[2])).size).toBeLessThanOrEqual(config.distractorCodes);
      if (same.length) matched++;
    }
    expect(Math.abs(bare / 400 - config.bareShare)).toBeLessThan(0.05);
    expect(Math.abs(matched / (400 - bare) - config.matchShare)).toBeLessThan(0.07);
  });
});
