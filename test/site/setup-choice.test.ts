/**
 * The setup form's choices (site/lib/setup-choice.ts) as pure functions: a task a method cannot
 * learn is moved and moved back, and a model change applies the method's settings for that model.
 */
import { describe, expect, it } from 'vitest';
import { choiceOf, METHODS, trainsModel } from '../../site/lib/methods.js';
import { ENDPOINT_ID } from '../../site/lib/models.js';
import { chooseMethod, chooseModel, chooseTask } from '../../site/lib/setup-choice.js';
import { INITIAL_SETUP, SKILL_LORA_DEFAULTS, SKILL_LORA_SORT_DEFAULTS, type Setup } from '../../site/lib/setup.js';

describe('setup choices', () => {
  it('moves a task the method cannot learn, and back when a later method can', () => {
    const start: Setup = { ...INITIAL_SETUP, task: 'named-format', method: 'exemplars' };
    const lora = chooseMethod(start, 'skill', null, 'lora');
    expect(lora.setup).toMatchObject({ task: 'sort-words', method: 'lora', ...SKILL_LORA_SORT_DEFAULTS });
    expect(lora.moved).toEqual({ from: 'named-format', to: 'sort-words' });
    const back = chooseMethod({ ...start, ...lora.setup }, 'skill', lora.moved, 'exemplars');
    expect(back.setup).toMatchObject({ task: 'named-format', method: 'exemplars' });
    expect(back.moved).toBeNull();
  });

  it("applies the method's settings for a model where they differ, and leaves a plain task pick alone", () => {
    const exemplars: Setup = { ...INITIAL_SETUP, task: 'named-format', method: 'exemplars' };
    expect(chooseModel(exemplars, 'skill', 'reader', null).setup).toMatchObject({ retrieve: 1, maxExemplars: 24, items: 48 });
    expect(chooseModel(exemplars, 'reader', 'tiny', null).setup).toMatchObject({ retrieve: 0, maxExemplars: 8 });
    expect(chooseModel(exemplars, 'tiny', 'smollm2-135m', null).setup).toEqual({});
    expect(chooseTask(exemplars, 'reader', 'copy-format')).toEqual({ task: 'copy-format' });
    expect(chooseTask({ ...INITIAL_SETUP }, 'skill', 'copy-format')).toMatchObject({ task: 'copy-format', ...SKILL_LORA_DEFAULTS });
    expect(chooseTask({ ...INITIAL_SETUP, task: 'copy-format' }, 'skill', 'sort-words')).toMatchObject({ task: 'sort-words', items: 1536 });
  });

  it('swaps a method that trains the model for the first that does not when the model becomes an endpoint', () => {
    const lora: Setup = { ...INITIAL_SETUP, task: 'copy-format', method: 'lora' };
    expect(chooseModel(lora, 'skill', ENDPOINT_ID, null).setup).toMatchObject({ method: 'exemplars', task: 'copy-format' });
    expect(chooseModel({ ...lora, method: 'router' }, 'skill', ENDPOINT_ID, null).setup.method).toBeUndefined();
  });

  it("runs each entry on the library's method of its kind, and names an id it does not offer", () => {
    expect(METHODS.map((m) => [m.id, m.method.kind, m.method.trains, trainsModel(m)])).toEqual([
      ['exemplars', 'training-free', undefined, false],
      ['lessons', 'training-free', undefined, false],
      ['gradient', 'gradient', 'head', true],
      ['lora', 'lora', 'layers', true],
      ['router', 'router', undefined, false],
    ]);
    expect(() => choiceOf('best-of-g')).toThrow('The playground has no method "best-of-g"; it offers exemplars, lessons, gradient, lora, router.');
  });
});
