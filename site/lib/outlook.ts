/**
 * Where a method cannot help on the model chosen, what was measured, in one sentence the page
 * shows before Start. The numbers are BENCHMARKS.md's: "methods" (every method on webgrpo-skill,
 * the same 32 training problems, 48 held-out ones, seed 4) and "skill-free" (exemplars and lessons
 * on the four skill tasks), "exemplars" (the reader model on named-format), and webgrpo-tiny's
 * random weights. Null where the method was measured
 * to help (gradient and LoRA on copy-format: 55% -> 89% at T=1 in the tab) or was not measured.
 * Pure.
 */

const TINY =
  'webgrpo-tiny has random weights, so every method on it shows the mechanics (sampling, rewards, advantages, updates), not a skill being learnt: webgrpo-skill is the model pretrained on the skill tasks.';

const SKILL: Record<string, string> = {
  exemplars:
    'Exemplars do not help webgrpo-skill: with 8 worked examples in its prompt, held-out greedy exact match fell from 55% to 18% over the four skill tasks (BENCHMARKS “skill-free”) and from 37.5% to 35.4% on count-letter (“methods”).',
  lessons:
    'Lessons hurt on webgrpo-skill: as its own critic it writes unreadable lessons (“2atat oatat ell”), and held-out greedy exact match fell from 37.5% to 0% on count-letter (BENCHMARKS “methods”) and from 55% to 15% over the four skill tasks (“skill-free”).',
  router:
    'The router did not move webgrpo-skill’s held-out accuracy: greedy exact match stayed at 37.5% on count-letter and at 0% on named-format (BENCHMARKS “methods”).',
};

/** Gradient methods on the tasks where the methods comparison measured no gain. */
const SKILL_GRADIENT: Record<string, Record<string, string>> = {
  gradient: {
    'count-letter': 'The head adapter did not lift count-letter on webgrpo-skill: held-out greedy exact match went from 37.5% to 31.3% (T=1 33.3% to 31.8%; BENCHMARKS “methods”).',
    'named-format': 'The head adapter did not lift named-format on webgrpo-skill: held-out exact match stayed at 0% (BENCHMARKS “methods”).',
  },
  lora: {
    'count-letter': 'LoRA did not lift count-letter on webgrpo-skill: held-out greedy exact match stayed at 37.5% (T=1 at 33.3%; BENCHMARKS “methods”).',
    'named-format': 'LoRA did not lift named-format on webgrpo-skill: held-out greedy exact match stayed at 0% (T=1 0% to 0.5%; BENCHMARKS “methods”).',
  },
};

/** On named-format, where a library carries the rule the prompt never shows, the model to pick instead. */
const SKILL_NAMED_FORMAT: Record<string, string> = {
  exemplars: '; on named-format webgrpo-reader (1.7 MB, taught to read worked examples), shown the worked example closest to each prompt, gains 62 to 100 points held-out greedy under six seed pairs (BENCHMARKS “exemplars”).',
};

/**
 * What the reader cannot do: pick the entry of a code out of a whole library (shown every code's
 * right worked example it writes one format for every word; retrieval, one experience per prompt,
 * picks for it), lessons (it writes them under the critic's schema, no step skipped, in the taught
 * form, but with the wrong code and format), and libraries on tasks other than named-format (not
 * measured).
 */
const READER_WHOLE_LIBRARY =
  'Shown its whole library, webgrpo-reader writes every held-out word in one format whatever the code (with a right worked example of every code, 12.5% to 25% held-out greedy on named-format against 100% shown only the closest; BENCHMARKS “exemplars”): set Experiences per prompt to 1.';
const READER: Record<string, string> = {
  lessons:
    'Lessons do not teach webgrpo-reader the rule: as its own critic it writes every reply under the critic’s schema (no critic step skipped) and its lessons read like “fig 4 means format #*#”, but it does not copy the task’s code and format into them, so on named-format held-out greedy exact match rose by 0 to 25 points over six seed pairs only by writing every word in one format (BENCHMARKS “exemplars”): use exemplars on this model.',
};
const READER_OTHER_TASK =
  'webgrpo-reader was taught to read worked examples of named-format-like tasks (a code naming a format); on other tasks what a library does on it was not measured (on the skill tasks without a library it is about webgrpo-skill’s level).';

/**
 * The sentence for `method` on `model` (an id of models.ts) and `task`, or null; hub models were
 * not measured. `retrieve` is the run's experiences per prompt (0: the whole library).
 */
export function cannotHelp(method: string, model: string, task: string, retrieve = 0): string | null {
  if (model === 'tiny') return TINY;
  if (model === 'reader') {
    if (method === 'exemplars' && task !== 'named-format') return READER_OTHER_TASK;
    if (method === 'exemplars') return retrieve === 0 ? READER_WHOLE_LIBRARY : null;
    return READER[method] ?? null;
  }
  if (model !== 'skill') return null;
  const skill = SKILL[method];
  if (skill !== undefined) return task === 'named-format' && SKILL_NAMED_FORMAT[method] ? skill.replace(/\.$/, SKILL_NAMED_FORMAT[method]) : skill;
  return SKILL_GRADIENT[method]?.[task] ?? null;
}
