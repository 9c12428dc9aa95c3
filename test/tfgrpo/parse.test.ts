import { describe, expect, it } from 'vitest';
import {  } from '../../lib/index.js';
import { extractJson, parseLessons, parseOperations } from '../../lib/methods/training-free/parse.js';

describe('reading critic replies', () => {
  it('finds JSON in tags, fences, bare text or the first balanced bracket, ignoring <think>', () => {
    expect(extractJson('blah <lessons>["a"]</lessons>', 'lessons')).toEqual({ ok: true, value: ['a'] });
    expect(extractJson('<LESSONS>\n```json\n["b"]\n```\n</LESSONS>', 'lessons')).toEqual({ ok: true, value: ['b'] });
    expect(extractJson('Here:\n```json\n["c"]\n```', 'lessons')).toEqual({ ok: true, value: ['c'] });
    expect(extractJson(' ["d"] ', 'lessons')).toEqual({ ok: true, value: ['d'] });
    expect(extractJson('So the answer is ["e", "]"] and that is all', 'lessons')).toEqual({ ok: true, value: ['e', ']'] });
    expect(extractJson('<think><lessons>["no"]</lessons></think><lessons>["yes"]</lessons>', 'lessons')).toEqual({ ok: true, value: ['yes'] });
    expect(extractJson('<think>unfinished thought <lessons>["no"]</lessons>', 'lessons')).toMatchObject({ ok: false, problem: 'the reply was empty.' });
    expect(extractJson('<lessons>[oops]</lessons>', 'lessons')).toMatchObject({ ok: false, problem: expect.stringMatching(/inside <lessons> is not valid JSON/) });
    expect(extractJson('no json here', 'lessons')).toMatchObject({ ok: false, problem: 'no <lessons>...</lessons> block with JSON was found.' });
  });

  it('accepts lesson lists and operation lists in the shapes critics write', () => {
    expect(parseLessons('<lessons>["A.", {"content": "B."}, "  "]</lessons>')).toEqual({ ok: true, value: ['A.', 'B.'] });
    expect(parseLessons('{"lessons": ["C."]}')).toEqual({ ok: true, value: ['C.'] });
    expect(parseLessons('<lessons>[1]</lessons>')).toMatchObject({ ok: false, problem: 'lesson 1 is not a string.' });
    expect(parseLessons('<lessons>{"a": 1}</lessons>')).toMatchObject({ ok: false });
    expect(parseOperations('<operations>{"operation": "ADD", "content": "x"}</operations>')).toEqual({ ok: true, value: [{ operation: 'ADD', content: 'x' }] });
    expect(parseOperations('{"operations": [{"option": "modify", "modified_from": "G1", "experience": "y"}, {"operation": "FROB"}]}')).toEqual({
      ok: true,
      value: [{ operation: 'UPDATE', id: 'G1', content: 'y' }],
      notes: ['operation 2 ignored: unknown operation "FROB"'],
    });
    expect(parseOperations('<operations>[]</operations>')).toEqual({ ok: true, value: [] });
    expect(parseOperations('<operations>[{"x": 1}]</operations>')).toMatchObject({ ok: false, problem: expect.stringMatching(/no entry is a valid operation/) });
  });
});
