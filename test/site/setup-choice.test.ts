/**
 * The setup form's choices (site/lib/setup-choice.ts) as pure functions: a task a method cannot
 * learn is moved and moved back, and a model change applies the method's settings for that model.
 */
import { describe, expect, it } from 'vitest';
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
    expect(chooseTask({ ...INITIAL_SETUP, task: 'copy-format' }, 'skill', 'sort-words')).toMatchObject({ task: 'sort-words', items: 640 });
  });
});
