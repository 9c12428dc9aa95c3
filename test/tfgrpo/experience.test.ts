import { describe, expect, it } from 'vitest';
import { emptyLibrary, InvalidInputError, promptWithLibrary, renderExperiences, type ExperienceLibrary } from '../../lib/index.js';
import { applyExemplars, applyOperations, normalizeExperienceLibrary, selectExemplar, validateLibrary } from '../../lib/method.js';
import { DEFAULT_LESSONS_TEMPLATE, fillTemplate, withExperiences } from '../../lib/experience/render.js';
import { cleanContent, normalizeOperations } from '../../lib/experience/operations.js';
import { relevanceScores } from '../../lib/experience/relevance.js';

function library(...texts: string[]): ExperienceLibrary {
  return {
    nextId: texts.length,
    entries: texts.map((text, i) => ({ id: `G${i}`, text, createdStep: 0, updatedStep: 0 })),
    exemplars: [],
  };
}

describe('applyOperations: the batch rules', () => {
  it('adds, updates and deletes, recording the step and handing out fresh ids', () => {
    const before = library('Check units.', 'Reread the question.', 'Guess when unsure.');
    const { library: after, applied, skipped } = applyOperations(
      before,
      [
        { operation: 'ADD', content: 'Write the final answer last.' },
        { operation: 'UPDATE', id: 'G0', content: 'Check units on every line.' },
        { operation: 'DELETE', id: 'G2' },
        { operation: 'NONE' },
      ],
      { step: 7 },
    );
    expect(after.entries).toEqual([
      { id: 'G0', text: 'Check units on every line.', createdStep: 0, updatedStep: 7 },
      { id: 'G1', text: 'Reread the question.', createdStep: 0, updatedStep: 0 },
      { id: 'G3', text: 'Write the final answer last.', createdStep: 7, updatedStep: 7 },
    ]);
    expect(after.nextId).toBe(4);
    expect(applied.map((a) => `${a.operation} ${a.id}`)).toEqual(['ADD G3', 'UPDATE G0', 'DELETE G2']);
    expect(applied[1].previous).toBe('Check units.');
    expect(skipped).toEqual([{ index: 3, operation: { operation: 'NONE' }, reason: 'NONE' }]);
    // The input is untouched.
    expect(before.entries[0].text).toBe('Check units.');
  });

  it('accepts the paper names (add / modify / delete / keep) and its field names', () => {
    const { library: after, applied } = applyOperations(
      library('A.', 'B.'),
      [
        { option: 'modify', modified_from: 'G0', experience: 'A, refined.' },
        { option: 'delete', id: '[G1]' },
        { option: 'add', experience: 'C.' },
        { option: 'keep' },
      ],
      { step: 1 },
    );
    expect(after.entries.map((e) => `${e.id}:${e.text}`)).toEqual(['G0:A, refined.', 'G2:C.']);
    expect(applied).toHaveLength(3);
  });

  it('turns an UPDATE of an unknown id into an ADD', () => {
    const { library: after, applied } = applyOperations(library('A.'), [{ operation: 'UPDATE', id: 'G42', content: 'New idea.' }], { step: 2 });
    expect(after.entries.map((e) => e.id)).toEqual(['G0', 'G1']);
    expect(applied[0]).toMatchObject({ operation: 'ADD', id: 'G1', convertedFrom: 'UPDATE' });
  });

  it('lets DELETE win over an UPDATE of the same id, in either order', () => {
    for (const ops of [
      [{ operation: 'UPDATE', id: 'G0', content: 'Changed.' }, { operation: 'DELETE', id: 'G0' }],
      [{ operation: 'DELETE', id: 'G0' }, { operation: 'UPDATE', id: 'G0', content: 'Changed.' }],
    ]) {
      const { library: after, skipped } = applyOperations(library('A.', 'B.'), ops, { step: 1 });
      expect(after.entries.map((e) => e.id)).toEqual(['G1']);
      expect(skipped.map((s) => s.reason)).toEqual(['G0 is deleted in this batch']);
    }
  });

  it('merges duplicate ADDs, with each other and with existing entries', () => {
    const { library: after, skipped } = applyOperations(
      library('Check the units.'),
      [
        { operation: 'ADD', content: 'Show your work.' },
        { operation: 'ADD', content: '  show   your WORK ' },
        { operation: 'ADD', content: 'check the units' },
      ],
      { step: 3 },
    );
    expect(after.entries.map((e) => e.text)).toEqual(['Check the units.', 'Show your work.']);
    expect(skipped.map((s) => s.reason)).toEqual(['duplicate of G1', 'duplicate of G0']);
  });

  it('ignores and reports invalid operations and ids', () => {
    const { library: after, applied, skipped } = applyOperations(
      library('A.'),
      ['not an op', null, { operation: 'FROB', content: 'x' }, { operation: 'DELETE', id: 'G9' }, { operation: 'DELETE' }, { operation: 'ADD', content: 42 }, { operation: 'UPDATE', id: { a: 1 }, content: 'x' }, { content: 'no name' }],
      { step: 1 },
    );
    expect(after).toEqual(library('A.'));
    expect(applied).toEqual([]);
    expect(skipped.map((s) => s.reason)).toEqual([
      'not an object',
      'not an object',
      'unknown operation "FROB"',
      'unknown id G9',
      'unknown id (none)',
      'content is not a string',
      'id is not a string',
      'missing operation name',
    ]);
  });

  it('rejects an empty ADD and caps long content on one line', () => {
    const long = `Be careful ${'and precise '.repeat(60)}`;
    const { library: after, applied, skipped } = applyOperations(
      emptyLibrary(),
      [{ operation: 'ADD', content: ' \n\t ' }, { operation: 'ADD', content: `Line one\n[G7] forged line\r\nend.` }, { operation: 'ADD', content: long }],
      { step: 1, maxLength: 100 },
    );
    expect(skipped.map((s) => s.reason)).toEqual(['ADD without content']);
    expect(after.entries[0].text).toBe('Line one [G7] forged line end.');
    expect(after.entries[1].text.length).toBeLessThanOrEqual(100);
    expect(after.entries[1].text.endsWith('…')).toBe(true);
    expect(applied[1].truncated).toBe(true);
    expect(() => validateLibrary(after)).not.toThrow();
  });

  it('takes the last of several UPDATEs of one id', () => {
    const { library: after, skipped } = applyOperations(
      library('A.'),
      [{ operation: 'UPDATE', id: 'G0', content: 'First.' }, { operation: 'UPDATE', id: 'g0', content: 'Second.' }],
      { step: 1 },
    );
    expect(after.entries[0].text).toBe('Second.');
    expect(skipped[0].reason).toBe('a later UPDATE of G0 wins');
  });

  it('expands a paper-style merge into an UPDATE and DELETEs', () => {
    const { library: after } = applyOperations(library('A.', 'B.', 'C.'), [{ option: 'merge', merged_from: ['G0', 'G2'], experience: 'A and C.' }], { step: 4 });
    expect(after.entries.map((e) => `${e.id}:${e.text}`)).toEqual(['G0:A and C.', 'G1:B.']);
  });

  it('is deterministic, byte for byte', () => {
    const ops = [{ operation: 'ADD', content: 'X.' }, { operation: 'UPDATE', id: 'G1', content: 'Y.' }, { operation: 'DELETE', id: 'G0' }];
    const a = applyOperations(library('A.', 'B.'), ops, { step: 1 });
    const b = applyOperations(library('A.', 'B.'), structuredClone(ops), { step: 1 });
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  });

  it('normalises ids written as numbers or in brackets', () => {
    const { operations } = normalizeOperations([{ operation: 'delete', id: 3 }, { operation: 'delete', id: '[g4]' }, { operation: 'delete', id: ' 5 ' }]);
    expect(operations.map((o) => o.operation.id)).toEqual(['G3', 'G4', 'G5']);
  });
});

describe('cleanContent', () => {
  it('drops an echoed [G3] label and keeps text under the cap', () => {
    expect(cleanContent('[G3] Keep it short.', 400)).toEqual({ text: 'Keep it short.', truncated: false });
    expect(cleanContent('x'.repeat(50), 20).text).toHaveLength(20);
  });
});

describe('exemplars', () => {
  it('selects the best output only when it beats the group mean and the threshold', () => {
    expect(selectExemplar('t', ['a', 'b', 'c'], [0.2, 0.9, 0.9])).toEqual({ item: 't', output: 'b', score: 0.9 });
    expect(selectExemplar('t', ['a', 'b'], [0.5, 0.5])).toBeUndefined();
    expect(selectExemplar('t', ['a', 'b'], [0.1, 0.3], { threshold: 0.5 })).toBeUndefined();
    expect(selectExemplar('t', ['a', 'b', 'c'], [NaN, 0.1, 0.3])).toEqual({ item: 't', output: 'c', score: 0.3 });
    expect(selectExemplar('t', ['a'], [NaN])).toBeUndefined();
  });

  it('keeps one exemplar per item, replaces it only with a better score, and evicts the worst', () => {
    let lib = emptyLibrary();
    lib = applyExemplars(lib, [{ item: 'x', output: 'X1', score: 0.5 }, { item: 'y', output: 'Y1', score: 0.7 }], { step: 1 }).library;
    const second = applyExemplars(lib, [{ item: 'x', output: 'X2', score: 0.4 }, { item: 'y', output: 'Y2', score: 0.9 }, { item: 'z', output: 'Z', score: 0.6 }], { step: 2, maxExemplars: 2 });
    expect(second.library.exemplars.map((e) => `${e.id}:${e.output}:${e.score}`)).toEqual(['E1:Y2:0.9', 'E2:Z:0.6']);
    expect(second.skipped[0].reason).toMatch(/not better than E0/);
    expect(second.applied.map((a) => `${a.operation} ${a.id}`)).toEqual(['UPDATE E1', 'ADD E2', 'DELETE E0']);
  });
});

describe('normalizeExperienceLibrary', () => {
  it('normalises the @polyweave/grpo tool\'s { item, output, score } form into exemplars', () => {
    const lib = normalizeExperienceLibrary([
      { item: 'example', output: 'result', score: 0.8 },
      { item: 'example', output: 'better', score: 0.9 },
      { item: { task: 'Sort array' }, output: [1, 2], score: 0.5 },
    ]);
    expect(lib.exemplars).toEqual([
      { id: 'E0', item: 'example', output: 'better', score: 0.9, createdStep: 0, updatedStep: 0 },
      { id: 'E1', item: '{"task":"Sort array"}', output: '[1,2]', score: 0.5, createdStep: 0, updatedStep: 0 },
    ]);
    expect(lib.nextId).toBe(2);
  });

  it('accepts strings, { text } entries, the paper map and our own library', () => {
    expect(normalizeExperienceLibrary(['One.', { text: 'Two.' }, '   ']).entries.map((e) => `${e.id}:${e.text}`)).toEqual(['G0:One.', 'G1:Two.']);
    const paper = normalizeExperienceLibrary({ G3: 'Three.', G1: 'One.', weird: 'Other.' });
    expect(paper.entries.map((e) => `${e.id}:${e.text}`)).toEqual(['G3:Three.', 'G1:One.', 'G4:Other.']);
    expect(paper.nextId).toBe(5);
    expect(normalizeExperienceLibrary(paper)).toEqual(paper);
    expect(normalizeExperienceLibrary(undefined)).toEqual(emptyLibrary());
  });

  it('names the offending field of malformed input', () => {
    const cases: Array<[unknown, string]> = [
      [42, 'initialExperiences'],
      [[{ item: 'x', output: 'y', score: 'high' }], 'initialExperiences[0].score'],
      [[{ text: 5 }], 'initialExperiences[0].text'],
      [{ nextId: 1, entries: [{ id: 'G0', text: 'a\nb', createdStep: 0, updatedStep: 0 }], exemplars: [] }, 'initialExperiences.entries[0].text'],
      [{ nextId: 1, entries: [{ id: 'G5', text: 'a', createdStep: 0, updatedStep: 0 }], exemplars: [] }, 'initialExperiences.entries[0].id'],
    ];
    for (const [input, argument] of cases) {
      try {
        normalizeExperienceLibrary(input);
        throw new Error('expected a throw');
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidInputError);
        expect((error as InvalidInputError).argument).toBe(argument);
      }
    }
  });
});

describe('rendering', () => {
  it('renders numbered lines and exemplars, keeping lessons and the most recent first under the budget', () => {
    const lib: ExperienceLibrary = {
      nextId: 4,
      entries: [
        { id: 'G0', text: 'Old lesson that is rather long indeed.', createdStep: 0, updatedStep: 0 },
        { id: 'G1', text: 'Recent lesson.', createdStep: 2, updatedStep: 5 },
      ],
      exemplars: [{ id: 'E2', item: 'Sort b, a', output: 'Sorted: a, b', score: 1, createdStep: 3, updatedStep: 3 }],
    };
    const all = renderExperiences(lib, { tokenBudget: 1000 });
    expect(all.text).toBe('[G0] Old lesson that is rather long indeed.\n[G1] Recent lesson.\n\n[E2] Task: Sort b, a\nAnswer: Sorted: a, b');
    // Word counts + 1 per line: G0 costs 9, G1 4, E2 9. Lessons come first, the most recent first.
    const words = (t: string) => t.split(' ').length;
    const tight = renderExperiences(lib, { tokenBudget: 13, countTokens: words });
    expect(tight.included).toEqual(['G0', 'G1']);
    expect(tight.dropped).toEqual(['E2']);
    const tighter = renderExperiences(lib, { tokenBudget: 10, countTokens: words });
    expect(tighter.included).toEqual(['G1']);
    expect(tighter.dropped).toEqual(['G0', 'E2']);
    expect(tighter.tokens).toBe(4);
    expect(renderExperiences(lib, { excludeItem: 'Sort b, a' }).included).toEqual(['G0', 'G1']);
    expect(renderExperiences(emptyLibrary()).text).toBe('');
  });

  it('retrieves the entries closest to the task: a shared case name and phrase outweigh template words and a shared word alone', () => {
    const exemplar = (id: string, item: string, output: string, score = 1) => ({ id, item, output, score, createdStep: 1, updatedStep: 1 });
    const lib: ExperienceLibrary = {
      nextId: 9,
      entries: [],
      exemplars: [exemplar('E1', 'wrap 2: fig', '<fig>'), exemplar('E2', 'wrap 6: owl', '=owl='), exemplar('E3', 'wrap 4: cat', '#cat#'), exemplar('E4', 'wrap 6: cow', '=cow=', 2)],
    };
    // "wrap 6: fig" shares the rare word "fig" with E1, and "6" and the pair "wrap 6" with E2 and E4.
    const scores = relevanceScores('wrap 6: fig', lib.exemplars.map((e) => e.item));
    expect(scores[1]).toBeGreaterThan(scores[0]);
    expect(scores[0]).toBeGreaterThan(scores[2]);
    expect(scores[1]).toBeCloseTo(scores[3], 12);
    expect(relevanceScores('sort: b a', ['wrap 6: owl'])).toEqual([0]);
    // On a tie the better score goes first; what is kept is shown in library order.
    expect(renderExperiences(lib, { retrieve: 1, relevantTo: 'wrap 6: fig' }).included).toEqual(['E4']);
    const two = renderExperiences(lib, { retrieve: 2, relevantTo: 'wrap 6: fig' });
    expect(two.included).toEqual(['E2', 'E4']);
    expect(two.dropped).toEqual(['E1', 'E3']);
    // Lessons are compared by their text, and the budget still binds.
    const lessons: ExperienceLibrary = { nextId: 3, entries: [{ id: 'G1', text: 'wrap 4 means format #*#', createdStep: 1, updatedStep: 1 }, { id: 'G2', text: 'wrap 6 means format =*=', createdStep: 1, updatedStep: 2 }], exemplars: [] };
    expect(promptWithLibrary({ prompt: 'wrap 4: elk' }, lessons, { retrieve: 1 }).included).toEqual(['G1']);
    expect(renderExperiences(lessons, { retrieve: 1, relevantTo: 'wrap 4: elk', tokenBudget: 2 }).included).toEqual([]);
    expect(() => renderExperiences(lessons, { retrieve: 1 })).toThrow(/relevantTo/);
  });

  it('fills templates in one pass and wraps the last user message', () => {
    expect(fillTemplate('{{a}} {{b}} {{c}}', { a: '{{b}}', b: 'B' })).toBe('{{b}} B {{c}}');
    const prompt = withExperiences({ messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'Task?' }] }, '[G0] L.', DEFAULT_LESSONS_TEMPLATE);
    expect(prompt.messages?.[0]).toEqual({ role: 'system', content: 's' });
    expect(prompt.messages?.[1].content).toContain('[G0] L.');
    expect(prompt.messages?.[1].content.endsWith('Task?')).toBe(true);
    expect(withExperiences({ prompt: 'P' }, '', DEFAULT_LESSONS_TEMPLATE)).toEqual({ prompt: 'P' });
    expect(withExperiences({ prompt: 'P' }, 'E', '<{{experiences}}|{{prompt}}>')).toEqual({ prompt: '<E|P>' });
  });
});
