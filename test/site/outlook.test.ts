import { describe, expect, it } from 'vitest';
import { cannotHelp } from '../../site/lib/outlook.js';
import { METHODS } from '../../site/lib/methods.js';

describe('what a method cannot do on the model chosen, said before Start', () => {
  it('says every method on the random-weight model shows mechanics only', () => {
    for (const method of METHODS) expect(cannotHelp(method.id, 'tiny', 'digits')).toMatch(/^webgrpo-tiny has random weights.*mechanics/);
  });

  it('gives the measured fall for exemplars and lessons on the skill model, on every task', () => {
    for (const task of ['copy-format', 'count-letter', 'named-format']) {
      expect(cannotHelp('lessons', 'skill', task)).toContain('unreadable lessons');
      expect(cannotHelp('lessons', 'skill', task)).toContain('37.5% to 0%');
      expect(cannotHelp('exemplars', 'skill', task)).toContain('55% to 18%');
      expect(cannotHelp('router', 'skill', task)).toContain('stayed at 37.5%');
    }
  });

  it('stays quiet where gradient GRPO was measured to help, and says so where it did not', () => {
    expect(cannotHelp('lora', 'skill', 'copy-format')).toBeNull();
    expect(cannotHelp('gradient', 'skill', 'copy-format')).toBeNull();
    expect(cannotHelp('gradient', 'skill', 'count-letter')).toContain('37.5% to 31.3%');
    expect(cannotHelp('lora', 'skill', 'count-letter')).toContain('stayed at 37.5%');
    expect(cannotHelp('lora', 'skill', 'named-format')).toContain('stayed at 0%');
  });

  it('points exemplars on named-format to the reader, and says what the reader cannot do', () => {
    expect(cannotHelp('exemplars', 'skill', 'named-format')).toContain('webgrpo-reader');
    expect(cannotHelp('exemplars', 'skill', 'copy-format')).not.toContain('webgrpo-reader');
    // Exemplars help the reader on named-format when each prompt is shown its closest example, not when shown the whole library.
    expect(cannotHelp('exemplars', 'reader', 'named-format', 1)).toBeNull();
    expect(cannotHelp('exemplars', 'reader', 'named-format', 0)).toContain('Experiences per prompt to 1');
    expect(cannotHelp('exemplars', 'reader', 'named-format')).toContain('one format whatever the code');
    expect(cannotHelp('exemplars', 'reader', 'sort-words', 1)).toContain('not measured');
    expect(cannotHelp('lessons', 'reader', 'named-format', 1)).toContain('does not copy the task’s code and format');
    expect(cannotHelp('lora', 'reader', 'named-format')).toBeNull();
  });

  it('claims nothing about a model nobody measured', () => {
    for (const method of METHODS) expect(cannotHelp(method.id, 'smollm2-135m', 'copy-format')).toBeNull();
  });

  it('keeps each note to one sentence', () => {
    const notes = METHODS.flatMap((m) => ['copy-format', 'count-letter', 'named-format'].map((t) => cannotHelp(m.id, 'skill', t))).filter((n) => n !== null);
    const reader = [cannotHelp('lessons', 'reader', 'named-format')!, cannotHelp('exemplars', 'reader', 'named-format')!, cannotHelp('exemplars', 'reader', 'sort-words')!];
    for (const note of [...notes, ...reader, cannotHelp('router', 'tiny', 'digits')!]) expect(note.replace(/\(.*?\)/g, '').match(/[.!?](\s|$)/g)).toHaveLength(1);
  });
});
