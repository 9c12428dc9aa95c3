/**
 * Critic prompts cut to the critic's context (budget.ts): a prompt that fits is left whole; one
 * that does not is cut in the stated field order, each cut item ending with a marker, down to the
 * budget, while the template's text, the fields not named for cutting and the suffix stay whole.
 * Token counts here come from a tokenizer of one token per UTF-16 unit, so lengths are exact.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { criticBudget, cutText, fitPrompt, type CriticPrompt } from '../../lib/methods/training-free/budget.js';
import type { Policy } from '../../lib/core/policy.js';

function critic(maxPositions?: number): Policy {
  return {
    info: { model: 'chars', backend: 'recorded', ...(maxPositions !== undefined ? { maxPositions } : {}) },
    encode: async (text) => Array.from({ length: text.length }, () => 0),
    generateGroup: () => Promise.reject(new Error('not called')),
    dispose: async () => undefined,
  };
}

const TEMPLATE = 'Task:\n{{task}}\nAttempts:\n{{attempts}}\nLibrary:\n{{experiences}}\nAt most {{max_lessons}} lessons.';
const suffix = '\n\nAnswer with only this JSON object: {"lessons": ["..."]}';

function prompt(task: string, attempts: string[], experiences: string[]): CriticPrompt {
  return {
    template: TEMPLATE,
    fields: {
      task,
      attempts: { items: attempts, join: (shown) => shown.map((a, i) => `Attempt ${i + 1}: ${a}`).join('\n') },
      experiences: { items: experiences, join: (shown) => shown.join('\n') },
      max_lessons: '2',
    },
    cut: ['attempts', 'experiences', 'task'],
  };
}

describe('criticBudget', () => {
  it('keeps criticMaxNewTokens, at most half the context, and leaves room for the chat markup', () => {
    expect(criticBudget(critic(2048), 192)).toMatchObject({ maxNewTokens: 192, promptTokens: 2048 - 192 - 32 - 24 });
    expect(criticBudget(critic(512), 400).maxNewTokens).toBe(256);
    expect(criticBudget(critic(), 400)).toMatchObject({ maxNewTokens: 400, promptTokens: Infinity });
  });
});

describe('fitPrompt', () => {
  const text = fc.string({ unit: 'grapheme', maxLength: 400 });

  it('fits the budget, cutting in order with markers, and keeps the rest whole', async () => {
    await fc.assert(
      fc.asyncProperty(
        text,
        fc.array(text, { minLength: 1, maxLength: 5 }),
        fc.array(text, { maxLength: 6 }),
        fc.integer({ min: 600, max: 3000 }),
        async (task, attempts, experiences, context) => {
          const budget = criticBudget(critic(context), 128);
          const system = 'You review attempts.';
          const input = prompt(task, attempts, experiences);
          const whole = await fitPrompt({ ...input, cut: [] }, system, suffix, budget);
          const fitted = await fitPrompt(input, system, suffix, budget);
          const room = budget.promptTokens - system.length;
          expect(fitted.endsWith(suffix)).toBe(true);
          for (const part of TEMPLATE.split(/\{\{[a-z_]+\}\}/)) expect(fitted).toContain(part);
          if (whole.length <= room) {
            expect(fitted).toBe(whole);
            return;
          }
          // Every item cut to the least kept (24 characters and its marker): if that fits, the result does.
          const least = (items: string[]) => items.map((item) => cutText(item, 24));
          const minimal = await fitPrompt({ ...prompt(cutText(task, 24), least(attempts), least(experiences)), cut: [] }, system, suffix, budget);
          if (minimal.length <= room) expect(fitted.length).toBeLessThanOrEqual(room);
          expect(fitted).toContain('more characters cut]');
          // In order: the task is cut only once the attempts and the library are down to the least.
          if (!fitted.includes(`Task:\n${task}\nAttempts:`)) {
            for (const item of [...attempts, ...experiences]) expect(fitted).toContain(cutText(item, 24));
          }
        },
      ),
      { numRuns: 200, seed: 11 },
    );
  });

  it('cuts the longest items first, so short ones stay whole', async () => {
    const long = 'x'.repeat(1000);
    const budget = criticBudget(critic(1200), 128);
    const fitted = await fitPrompt(prompt('Sort the words.', [long, 'short one', long], []), '', '', budget);
    expect(fitted).toContain('Attempt 2: short one\n');
    expect(fitted.match(/more characters cut\]/g)).toHaveLength(2);
    expect(fitted.length).toBeLessThanOrEqual(budget.promptTokens);
    expect(fitted).toContain('Task:\nSort the words.\n');
  });

  it('drops the last items of a list of many short ones when cutting each cannot make it fit', async () => {
    // Forty lessons of 40 characters: cut to the least kept each, with its marker, they are no shorter.
    const lessons = Array.from({ length: 40 }, (_, i) => `[G${i}] wrap ${i % 6}: write the word as #word#.`);
    const budget = criticBudget(critic(1200), 128);
    const fitted = await fitPrompt(prompt('wrap 4: hen', ['Right.', 'Wrong.'], lessons), '', suffix, budget);
    expect(fitted.length).toBeLessThanOrEqual(budget.promptTokens);
    expect(fitted).toContain(lessons[0].slice(0, 20));
    expect(fitted).not.toContain(lessons[39]);
    expect(fitted).toMatch(/ \[\.\.\. \d+ more cut\]\nAt most 2 lessons\./);
    expect(fitted.endsWith(suffix)).toBe(true);
  });

  it('leaves a prompt whole when the context is unknown', async () => {
    const long = 'y'.repeat(5000);
    expect(await fitPrompt(prompt(long, [long], [long]), '', suffix, criticBudget(critic(), 128))).not.toContain('more characters cut]');
  });
});

describe('cutText', () => {
  it('says how much was cut and never splits a surrogate pair', () => {
    expect(cutText('abcdef', 6)).toBe('abcdef');
    expect(cutText('abcdef', 2)).toBe('ab [... 4 more characters cut]');
    expect(cutText('a😀b', 2)).toBe('a [... 3 more characters cut]');
  });
});
