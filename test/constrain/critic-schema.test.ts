import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { emptyLibrary, type ExperienceLibrary } from '../../lib/index.js';
import { applyOperations, compileResponseFormat, criticLessonsSchema, criticOperationsSchema } from '../../lib/method.js';
import { mulberry32 } from '../../lib/math.js';
import { parseLessons, parseOperations } from '../../lib/methods/training-free/parse.js';
import { characterVocabulary, syntheticByteBpe } from '../fixtures/vocabularies.js';
import { randomWalk } from './walk.js';

const ajv = new Ajv({ strict: false });
const vocabularies = [characterVocabulary(), syntheticByteBpe(3000)];

function library(): ExperienceLibrary {
  const base = emptyLibrary();
  return {
    ...base,
    nextId: 3,
    entries: [
      { id: 'G0', text: 'Read the question twice.', createdStep: 0, updatedStep: 0 },
      { id: 'G2', text: 'Check units before answering.', createdStep: 1, updatedStep: 1 },
    ],
  };
}

describe('the critic schemas, constrained', () => {
  it('every operations answer parses, validates and applies with no malformed or unknown-id operation', () => {
    const lib = library();
    const schema = criticOperationsSchema({ ids: lib.entries.map((e) => e.id), maxOperations: 4, maxLength: 60 });
    const validate = ajv.compile(schema);
    const grammar = compileResponseFormat({ type: 'json_schema', schema });
    const rng = mulberry32(21);
    for (const tv of vocabularies) {
      for (let walk = 0; walk < 25; walk++) {
        const { text, finished } = randomWalk(grammar, tv, rng);
        expect(finished).toBe(true);
        expect(validate(JSON.parse(text)), text).toBe(true);
        const parsed = parseOperations(text);
        if (!parsed.ok) throw new Error(`${text}: ${parsed.problem}`);
        expect(parsed.notes).toBeUndefined();
        const result = applyOperations(lib, parsed.value, { step: 2 });
        for (const s of result.skipped) expect(s.reason, text).not.toMatch(/unknown id|without content|not a string|unknown operation/);
      }
    }
  });

  it('leaves UPDATE and DELETE out for an empty library, and every lessons answer parses', () => {
    const ops = JSON.stringify(criticOperationsSchema({ ids: [] }));
    expect(ops).not.toMatch(/UPDATE|DELETE/);
    const schema = criticLessonsSchema({ maxLessons: 2, maxLength: 50 });
    const validate = ajv.compile(schema);
    const grammar = compileResponseFormat({ type: 'json_schema', schema });
    const rng = mulberry32(4);
    for (const tv of vocabularies) {
      for (let walk = 0; walk < 25; walk++) {
        const { text } = randomWalk(grammar, tv, rng);
        expect(validate(JSON.parse(text))).toBe(true);
        const parsed = parseLessons(text);
        if (!parsed.ok) throw new Error(`${text}: ${parsed.problem}`);
        expect(parsed.value.length).toBeLessThanOrEqual(2);
        for (const lesson of parsed.value) expect(lesson.trim()).not.toBe('');
      }
    }
  });

  it('compiles at its default sizes within the default state limit', () => {
    const ops = compileResponseFormat({ type: 'json_schema', schema: criticOperationsSchema() });
    const lessons = compileResponseFormat({ type: 'json_schema', schema: criticLessonsSchema() });
    expect(ops.automatonStates).toBeLessThan(500_000);
    expect(lessons.automatonStates).toBeLessThan(500_000);
  });
});
