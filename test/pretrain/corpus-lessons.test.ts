/**
 * The reader's lessons corpus: lesson-reading chats in the lessons template a run renders, whose
 * reply follows the lesson of the prompt's code; and critic chats asked through the product's own
 * critic code (its templates and the constrained JSON request), answered with the lesson that
 * names the reference answer's format and the operation that lesson is to the library.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_LESSONS_TEMPLATE } from '../../lib/experience/render.js';
import { mulberry32 } from '../../lib/math/random.js';
import { FORMATS } from '../../lib/tasks/skill.js';
import { vocabulary } from '../../scripts/build-model/tokenizer.js';
import { buildLessonCorpus, lessonReadingChat, type LessonCorpusConfig } from '../../scripts/pretrain/corpus-lessons.js';

const config: LessonCorpusConfig = { seed: 3, reading: 0, groups: 40, summariesPerGroup: 2, codes: 9, maxLessons: 8, matchShare: 0.8, criticMaxNewTokens: 128, groupSize: 8 };
const VOCAB = vocabulary(0);
const text = (ids: readonly number[]) => ids.map((id) => VOCAB[id]).join('');
const [preamble] = DEFAULT_LESSONS_TEMPLATE.split('{{experiences}}');

describe('the lessons corpus', () => {
  it('renders lessons as a lessons run does and answers in the format the lesson of the code names', () => {
    const random = mulberry32(7);
    let matched = 0;
    for (let i = 0; i < 300; i++) {
      const { prompt, reply } = lessonReadingChat(config, random);
      const [verb, code, word] = /^(\w+) (\d+): (\w+)$/.exec(prompt.slice(prompt.lastIndexOf('\n') + 1))!.slice(1);
      expect(verb).not.toBe('wrap');
      const format = reply.replaceAll(word, '*');
      expect(FORMATS).toContain(format);
      if (prompt.startsWith(preamble)) {
        const lessons = [...prompt.matchAll(/^\[G\d+\] (\w+) (\d+) means format (\S+)$/gm)];
        expect(lessons.length).toBeGreaterThan(0);
        expect(lessons.every((m) => m[1] === verb)).toBe(true);
        const own = lessons.filter((m) => m[2] === code);
        expect(own.length).toBeLessThanOrEqual(1);
        if (own.length) {
          expect(own[0][3]).toBe(format);
          matched++;
        }
      } else expect(prompt).toBe(`${verb} ${code}: ${word}`);
    }
    expect(matched).toBeGreaterThan(150);
  });

  it('asks the critic through the product and answers each step as a careful critic would', async () => {
    const corpus = await buildLessonCorpus(config);
    const of = (task: string) => corpus.filter((e) => e.task === task);
    expect(of('critic-summary')).toHaveLength(2 * config.groups);
    expect(of('critic-critique')).toHaveLength(config.groups);
    expect(of('critic-update')).toHaveLength(config.groups);
    const operations = new Set<string>();
    for (const chat of of('critic-critique')) {
      const prompt = text(chat.promptIds);
      // The constrained request the run makes of a critic that decodes under a schema.
      expect(prompt).toContain('Answer with only this JSON object, no tags and no other text: {"lessons"');
      expect(prompt.length).toBeLessThanOrEqual(2048 - config.criticMaxNewTokens);
      const [, verb, code, word] = /Task:\n(\w+) (\d+): (\w+)\n/.exec(prompt)!;
      const reference = /Reference answer: (\S+)\n/.exec(prompt)![1];
      const reply = JSON.parse(text(chat.replyIds).replace('<|im_end|>', ''));
      expect(reply).toEqual({ lessons: [`${verb} ${code} means format ${reference.replaceAll(word, '*')}`] });
    }
    for (const chat of of('critic-update')) {
      const prompt = text(chat.promptIds);
      const lesson = /Proposed lessons:\n1\. (.*)\n/.exec(prompt)![1];
      const [op] = JSON.parse(text(chat.replyIds).replace('<|im_end|>', '')).operations;
      operations.add(op.operation);
      const same = [...prompt.matchAll(/^\[(G\d+)\] (.*)$/gm)].find((m) => m[2].startsWith(lesson.slice(0, lesson.indexOf(' means '))));
      if (!same) expect(op).toEqual({ operation: 'ADD', content: lesson });
      else if (same[2] === lesson) expect(op).toEqual({ operation: 'NONE' });
      else expect(op).toEqual({ operation: 'UPDATE', id: same[1], content: lesson });
    }
    expect([...operations].sort()).toEqual(['ADD', 'NONE', 'UPDATE']);
    // A merge is asked only when the group update edits the library, and passes the edit through.
    expect(of('critic-merge').length).toBe(of('critic-update').filter((e) => !text(e.replyIds).includes('NONE')).length);
  });
});
