/**
 * The library ceiling (scripts/pretrain/library-ceiling.ts) tells a model that reads its library
 * by the code from one that copies any format it sees: two scripted readers over the real
 * rendered prompts, one that finds the line of the prompt's code (every held-out problem right)
 * and one that writes every word in the first format its library shows (with the whole library,
 * right only on that format's code, no more than writing one format for every word; shown only
 * the entry closest to the prompt, right everywhere).
 */
import { describe, expect, it } from 'vitest';
import type { Completion, GenerateGroupOptions, GroupResult, Policy } from '../../lib/core/policy.js';
import { NAMED_FORMATS, namedFormat } from '../../lib/tasks/named-format.js';
import { splitOf } from '../../lib/tasks/split.js';
import { fullExemplarLibrary, fullLessonLibrary, libraryCeiling } from '../../scripts/pretrain/library-ceiling.js';

const completion = (text: string): Completion => ({ text, tokenIds: [...text].map((c) => c.charCodeAt(0)), logprobs: [...text].map(() => -0.1), finishReason: 'eos' });

/** A policy that answers the last line of the user's message from its library text with `read`. */
function reader(read: (library: string, code: string, word: string) => string): Policy {
  return {
    info: { model: 'scripted-reader', backend: 'scripted' },
    async generateGroup(request: GenerateGroupOptions): Promise<GroupResult> {
      const content = request.messages!.at(-1)!.content;
      const [, code, word] = /(\d+): (\w+)$/.exec(content)!;
      const text = read(content, code, word);
      return { promptTokenIds: [1], completions: Array.from({ length: request.groupSize }, () => completion(text)), usage: { promptTokens: 1, completionTokens: text.length } };
    },
    async dispose() {},
  };
}

/** The format a library line of `code` shows: a lesson names it; a worked example's answer shows it around its word. */
function formatIn(library: string, code: string): string | undefined {
  const lesson = new RegExp(`wrap ${code} means format (\\S+)`).exec(library);
  if (lesson) return lesson[1];
  const example = new RegExp(`Task: wrap ${code}: (\\w+)\\nAnswer: (\\S+)`).exec(library);
  return example ? example[2].replaceAll(example[1], '*') : undefined;
}

const byCode = reader((library, code, word) => (formatIn(library, code) ?? '*').replaceAll('*', word));
const firstShown = reader((library, _code, word) => {
  const code = /(?:Task: wrap |\] wrap )(\d+)/.exec(library)![1];
  return formatIn(library, code)!.replaceAll('*', word);
});

describe('the library ceiling', () => {
  it('holds one right training-split example and one right lesson of every code', () => {
    const exemplars = fullExemplarLibrary(101).exemplars;
    expect(exemplars.map((e) => /wrap (\d+):/.exec(e.item)![1])).toEqual(NAMED_FORMATS.map((_, i) => String(i + 1)));
    for (const [i, e] of exemplars.entries()) {
      expect(splitOf(e.item)).toBe('train');
      expect(e.output).toBe(NAMED_FORMATS[i].replaceAll('*', e.item.slice(e.item.indexOf(': ') + 2)));
    }
    expect(fullLessonLibrary().entries.map((e) => e.text)).toEqual(NAMED_FORMATS.map((f, i) => `wrap ${i + 1} means format ${f}`));
  });

  it('scores a reader by the code 100%, and a copier of one shown format its code\'s share unless shown only the closest entry', async () => {
    const heldOut = { size: 48, seed: 5101 };
    const read = await libraryCeiling(byCode, { trainSeed: 101, heldOut });
    for (const readings of [read.whole, read.closest]) {
      expect(readings.exemplars.accuracy).toBe(1);
      expect(readings.lessons.accuracy).toBe(1);
    }

    const copied = await libraryCeiling(firstShown, { trainSeed: 101, heldOut });
    const shareOf = (code: number) => namedFormat.dataset(heldOut).filter((p) => p.messages![0].content.startsWith(`wrap ${code}:`)).length / heldOut.size;
    // Both libraries render code 1's line first, so the copier writes every word as "[word]".
    expect(copied.whole.exemplars.formats).toEqual({ '[*]': 48 });
    expect(copied.whole.exemplars.accuracy).toBeCloseTo(shareOf(1), 12);
    expect(copied.whole.lessons.accuracy).toBeCloseTo(shareOf(1), 12);
    expect(copied.oneFormat.accuracy).toBe(Math.max(...NAMED_FORMATS.map((_, i) => shareOf(i + 1))));
    expect(copied.whole.exemplars.accuracy).toBeLessThanOrEqual(copied.oneFormat.accuracy);
    // Shown only the entry of its prompt's code, the copier's one format is the right one.
    expect(copied.closest.exemplars.accuracy).toBe(1);
    expect(copied.closest.lessons.accuracy).toBe(1);
  });
});
