/**
 * The critic's replies are untrusted model output: random text, and valid replies mutated (cut,
 * spliced, nested, unbalanced), never make the parsers throw; each answer is a value or a reason.
 * Bounded: a fixed number of runs per property, each a short string.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ExperienceLibrary } from '../../lib/index.js';
import { applyOperations, validateLibrary } from '../../lib/method.js';
import { extractJson, parseLessons, parseOperations } from '../../lib/methods/training-free/parse.js';

const valid = [
  '<lessons>["Check the order before answering.", {"content": "Compare letters one by one."}]</lessons>',
  '<think>first</think><operations>[{"operation": "ADD", "content": "x"}, {"operation": "UPDATE", "id": "G1", "content": "y"}, {"operation": "DELETE", "id": "G0"}]</operations>',
  '```json\n{"operations": [{"option": "modify", "modified_from": "G1", "experience": "z"}]}\n```',
  'So: [{"operation": "NONE"}] done',
];

/** A valid reply with a random edit: a cut, an insertion, a deletion or a repeat. */
const mutated = fc
  .tuple(fc.constantFrom(...valid), fc.nat(), fc.nat(), fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('cut', 'insert', 'delete', 'repeat'))
  .map(([text, a, b, insert, how]) => {
    const i = a % (text.length + 1);
    const j = i + (b % (text.length - i + 1));
    if (how === 'cut') return text.slice(0, i);
    if (how === 'insert') return text.slice(0, i) + insert + text.slice(i);
    if (how === 'delete') return text.slice(0, i) + text.slice(j);
    return text.slice(0, j) + text.slice(i);
  });

/** Bracket- and tag-heavy noise, where a naive scanner would recurse, loop or index out of range. */
const structural = fc
  .array(fc.constantFrom('[', ']', '{', '}', '"', '\\', ',', ':', '<lessons>', '</lessons>', '<operations>', '</operations>', '<think>', '</think>', '```', '```json\n', 'null', '1e999', '"G1"', ' '), {
    maxLength: 60,
  })
  .map((parts) => parts.join(''));

const replies = fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), mutated, structural, fc.jsonValue().map((v) => JSON.stringify(v) ?? ''));

describe('critic output parsers under random and mutated replies', () => {
  it('never throw: every reply is parsed or refused with a reason', () => {
    fc.assert(
      fc.property(replies, (text) => {
        for (const parsed of [parseLessons(text), parseOperations(text), extractJson(text, 'lessons')]) {
          if (parsed.ok) expect(parsed.value).toBeDefined();
          else expect(typeof parsed.problem).toBe('string');
        }
      }),
      { numRuns: 1500, seed: 15 },
    );
  });

  it('keep only well-typed lessons and operations, which the library applies or skips without throwing', () => {
    const library: ExperienceLibrary = {
      nextId: 2,
      entries: [
        { id: 'G0', text: 'Start here.', createdStep: 0, updatedStep: 0 },
        { id: 'G1', text: 'Then look again.', createdStep: 0, updatedStep: 0 },
      ],
      exemplars: [],
    };
    const before = JSON.stringify(library);
    fc.assert(
      fc.property(replies, (text) => {
        const lessons = parseLessons(text);
        if (lessons.ok) for (const lesson of lessons.value) expect(typeof lesson).toBe('string');
        const operations = parseOperations(text);
        if (!operations.ok) return;
        for (const op of operations.value) {
          expect(['ADD', 'UPDATE', 'DELETE', 'NONE']).toContain(op.operation);
          if (op.content !== undefined) expect(typeof op.content).toBe('string');
          if (op.id !== undefined) expect(typeof op.id).toBe('string');
        }
        const result = applyOperations(library, operations.value, { step: 1 });
        validateLibrary(result.library);
        // The library passed in is never modified.
        expect(JSON.stringify(library)).toBe(before);
      }),
      { numRuns: 1500, seed: 16 },
    );
  });
});
