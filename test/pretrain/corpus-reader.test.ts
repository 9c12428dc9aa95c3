/**
 * The reader's corpus: seeded, in the configured shares; reading chats in the templates a
 * Training-Free run renders, answered with the shown code's format; critic chats with the run's
 * own prompts and replies that the method's parsers read as one lesson naming the rule and
 * operations against the listed library.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_EXEMPLARS_TEMPLATE, DEFAULT_LESSONS_TEMPLATE } from '../../lib/experience/render.js';
import { mulberry32 } from '../../lib/math/random.js';
import { parseLessons, parseOperations } from '../../lib/methods/training-free/parse.js';
import { FORMATS } from '../../lib/tasks/skill.js';
import { vocabulary } from '../../scripts/build-model/tokenizer.js';
import { buildReaderCorpus, exemplarReadingChat, lessonFromReference, lessonReadingChat, READER, ruleLesson } from '../../scripts/pretrain/corpus-reader.js';

const config = { ...READER, steps: 20, batch: 16 };
const VOCAB = vocabulary(0);
const text = (ids: number[]) => ids.map((id) => VOCAB[id]).join('');
/** A reply's format: the word replaced by `*`. */
const formatOf = (reply: string, word: string) => reply.replaceAll(word, '*');
const taskOf = (prompt: string) => /^(\w+) (\d+): (\w+)$/.exec(prompt.slice(prompt.lastIndexOf('\n') + 1))!.slice(1);

describe('the reader corpus', () => {
  it('is seeded and has the configured size and shares', async () => {
    const corpus = await buildReaderCorpus(config);
    expect(await buildReaderCorpus(config)).toEqual(corpus);
    expect(corpus).toHaveLength(config.steps * config.batch);
    const share = (task: string) => corpus.filter((e) => e.task === task).length / corpus.length;
    expect(share('reading-exemplars')).toBeCloseTo(config.exemplarReadingShare, 2);
    expect(share('reading-lessons')).toBeCloseTo(config.lessonReadingShare, 2);
    expect(share('critic')).toBeCloseTo(config.criticShare, 2);
  });

  it('answers an exemplars prompt with the format its examples show for the code', () => {
    const random = mulberry32(5);
    const [preamble] = DEFAULT_EXEMPLARS_TEMPLATE.split('{{experiences}}');
    let matched = 0;
    for (let i = 0; i < 300; i++) {
      const { prompt, reply } = exemplarReadingChat(config, random);
      const [verb, code, word] = taskOf(prompt);
      expect(FORMATS).toContain(formatOf(reply, word));
      if (!prompt.startsWith(preamble)) continue;
      const blocks = [...prompt.matchAll(/\[E\d+\] Task: (\w+) (\d+): (\w+)\nAnswer: (.+)/g)];
      expect(blocks.length).toBeLessThanOrEqual(config.maxShown);
      expect(blocks.every((m) => m[1] === verb)).toBe(true);
      const same = blocks.filter((m) => m[2] === code);
      for (const m of same) expect(formatOf(m[4], m[3])).toBe(formatOf(reply, word));
      if (same.length) matched++;
    }
    expect(matched).toBeGreaterThan(200);
  });

  it('answers a lessons prompt with the format its lesson for the code names', () => {
    const random = mulberry32(6);
    const [preamble] = DEFAULT_LESSONS_TEMPLATE.split('{{experiences}}');
    let matched = 0;
    for (let i = 0; i < 300; i++) {
      const { prompt, reply } = lessonReadingChat(config, random);
      const [verb, code, word] = taskOf(prompt);
      if (!prompt.startsWith(preamble)) continue;
      const lesson = prompt.split('\n').find((line) => line.includes(`] ${verb} ${code}: `));
      if (!lesson) continue;
      expect(lesson.slice(lesson.indexOf('] ') + 2)).toBe(ruleLesson(verb, Number(code), formatOf(reply, word)));
      matched++;
    }
    expect(matched).toBeGreaterThan(200);
  });

  it('reads a rule lesson off a task and its reference answer', () => {
    expect(lessonFromReference('wrap 4: hen', '#hen#')).toBe('wrap 4: write the word as #word#.');
    expect(lessonFromReference('wrap 5: fox', 'fox-fox')).toBe(ruleLesson('wrap', 5, '*-*'));
  });

  it('teaches the critic with the run’s prompts and replies its parsers accept', async () => {
    const critic = (await buildReaderCorpus(config)).filter((e) => e.task === 'critic').map((e) => ({ prompt: text(e.promptIds), tokens: e.promptIds.length, reply: text(e.replyIds.slice(0, -1)) }));
    const stage = (start: string) => critic.filter((c) => c.prompt.includes(`<|im_start|>user\n${start}`));
    const [summaries, critiques, updates, merges] = ['Here is one attempt', 'Several attempts', 'Decide how', 'Several reviewers'].map(stage);
    for (const list of [summaries, critiques, updates, merges]) expect(list.length).toBeGreaterThan(0);
    for (const c of critiques) {
      const task = /Task:\n(.+)\n/.exec(c.prompt)![1];
      const reference = /Reference answer: (.+)\n/.exec(c.prompt)![1];
      const parsed = parseLessons(c.reply);
      expect(parsed).toEqual({ ok: true, value: [lessonFromReference(task, reference)] });
    }
    for (const c of [...updates, ...merges]) {
      const parsed = parseOperations(c.reply);
      expect(parsed.ok).toBe(true);
      if (parsed.ok) expect(parsed.value.length).toBeGreaterThan(0);
    }
    for (const c of summaries) expect(c.reply).toMatch(/^(Right|Wrong): /);
    // Every critic prompt fits the model's context with its reply tokens to spare.
    for (const c of critic) expect(c.tokens + config.criticMaxNewTokens).toBeLessThanOrEqual(config.context);
  });
});
