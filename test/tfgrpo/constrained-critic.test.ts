/**
 * A critic that decodes under a schema (`info.responseFormats`) is asked for bare JSON and given
 * the lessons' and operations' schemas; one that cannot is asked as before, with no format.
 */
import { describe, expect, it } from 'vitest';
import { criticLessonsSchema } from '../../lib/experience/critic-schema.js';
import { critiqueGroup } from '../../lib/methods/training-free/critique.js';
import { resolveConfig } from '../../lib/methods/training-free/options.js';
import type { ExperienceLibrary } from '../../lib/experience/types.js';
import type { GenerateGroupOptions, GroupResult, Policy } from '../../lib/core/policy.js';

/** Answers summaries with text, the critique with lessons, the update with one ADD; records each call. */
function scriptedCritic(responseFormats: boolean): Policy & { calls: GenerateGroupOptions[] } {
  const calls: GenerateGroupOptions[] = [];
  return {
    calls,
    info: { model: 'scripted', backend: 'recorded', responseFormats },
    async generateGroup(o): Promise<GroupResult> {
      calls.push(o);
      const prompt = o.messages![o.messages!.length - 1].content;
      const text = /operations/i.test(prompt) && calls.length > 3 ? '{"operations": [{"operation": "ADD", "content": "Check the units."}]}' : calls.length > 2 ? '{"lessons": ["Check the units."]}' : 'a summary';
      return { promptTokenIds: [], completions: [{ text, tokenIds: [], logprobs: [], finishReason: 'eos' }], usage: { promptTokens: 0, completionTokens: 0 } };
    },
    async dispose() {},
  };
}

const group = { task: 'Add 2 and 3.', reference: '5', rollouts: [{ text: '5', reward: 1 }, { text: '6', reward: 0 }] };
const library: ExperienceLibrary = { nextId: 1, entries: [], exemplars: [] };

describe('the lessons-mode critic with responseFormat', () => {
  for (const responseFormats of [true, false]) {
    it(`${responseFormats ? 'passes the schemas to a critic that decodes under them' : 'passes no format to a critic that cannot'}`, async () => {
      const critic = scriptedCritic(responseFormats);
      const config = resolveConfig({ policy: critic, mode: 'lessons', rewards: [{ name: 'exact', score: () => 1 }], dataset: [{ prompt: 'Add 2 and 3.' }] } as never);
      const warnings: string[] = [];
      const result = await critiqueGroup({ critic, config, signal: new AbortController().signal }, group, library, [0, 0], { warn: async (_s, m) => void warnings.push(m) });
      expect(warnings).toEqual([]);
      expect(result.critique.parsed).toEqual(['Check the units.']);
      expect(result.groupUpdate?.parsed).toEqual([{ operation: 'ADD', content: 'Check the units.' }]);
      const [s1, s2, critique, update] = critic.calls;
      expect(s1.responseFormat).toBeUndefined(); // summaries are free text
      expect(s2.responseFormat).toBeUndefined();
      if (responseFormats) {
        // With ground truth the critiqued group has a reward spread: at least one lesson. Each lesson
        // is as long as two fit the 512-token reply (JSON included).
        expect(critique.responseFormat).toEqual({ type: 'json_schema', schema: criticLessonsSchema({ maxLessons: 2, minLessons: 1, maxLength: Math.floor((512 - 14) / 2) - 3 }) });
        // One operation per proposed lesson.
        expect(update.responseFormat).toMatchObject({ type: 'json_schema', schema: { properties: { operations: { minItems: 1, maxItems: 1 } } } });
        expect(update.responseFormat).toMatchObject({ type: 'json_schema' });
        expect(critique.messages!.at(-1)!.content).toContain('Answer with only this JSON object');
      } else {
        expect(critique.responseFormat).toBeUndefined();
        expect(update.responseFormat).toBeUndefined();
        expect(critique.messages!.at(-1)!.content).not.toContain('Answer with only this JSON object');
      }
    });
  }
});
