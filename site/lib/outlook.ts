/**
 * Where a method was measured not to help on the model and task chosen, what was measured, in one
 * sentence the page shows before Start. A sentence only for a combination (model, task, method)
 * that a benchmark ran: each row of MEASURED names its BENCHMARKS.md section and table row, and
 * test/site/outlook.test.ts reads the numbers there. Elsewhere (a combination measured to help,
 * such as LoRA on copy-format, or never measured) nothing is claimed. Pure.
 */

/** A held-out exact match before and after, in percent. */
type Change = readonly [before: number, after: number];

export interface Measurement {
  model: 'skill' | 'reader';
  task: string;
  method: string;
  /** The BENCHMARKS.md section (`<!-- bench:<name> -->`), its table (a `###` heading), and the row's first cell(s). */
  bench: 'methods' | 'skill-free' | 'skill';
  table?: string;
  row: readonly string[];
  greedy: Change;
  t1: Change;
  /** How the measured run differs from a run of the page's settings, where it does. */
  schedule?: string;
  /** Why, where the benchmark shows it. */
  why?: string;
}

export const MEASURED: readonly Measurement[] = [
  // skill-free: exemplars and lessons, 12 training problems, per skill task (the base row is "before").
  ...(
    [
      ['add-subtract', [8, 4], [6, 2], [8, 4], [6, 0]],
      ['sort-words', [48, 0], [20, 0], [48, 8], [20, 2]],
      ['count-letter', [68, 32], [44, 42], [68, 32], [44, 17]],
      ['copy-format', [96, 36], [44, 7], [96, 16], [44, 2]],
    ] as const
  ).flatMap(([task, eg, et, lg, lt]): Measurement[] => [
    { model: 'skill', task, method: 'exemplars', bench: 'skill-free', row: [task, 'exemplars'], greedy: eg, t1: et },
    { model: 'skill', task, method: 'lessons', bench: 'skill-free', row: [task, 'lessons'], greedy: lg, t1: lt, why: 'as its own critic it writes unreadable lessons' },
  ]),
  // methods: every method on webgrpo-skill at named-format and count-letter, then webgrpo-reader at named-format.
  { model: 'skill', task: 'named-format', method: 'exemplars', bench: 'methods', table: 'named-format', row: ['exemplars'], greedy: [0, 0], t1: [0, 0] },
  { model: 'skill', task: 'named-format', method: 'lessons', bench: 'methods', table: 'named-format', row: ['lessons'], greedy: [0, 0], t1: [0, 0] },
  { model: 'skill', task: 'named-format', method: 'gradient', bench: 'methods', table: 'named-format', row: ['head adapter'], greedy: [0, 0], t1: [0, 0] },
  { model: 'skill', task: 'named-format', method: 'lora', bench: 'methods', table: 'named-format', row: ['lora'], greedy: [0, 0], t1: [0, 0.5] },
  { model: 'skill', task: 'named-format', method: 'router', bench: 'methods', table: 'named-format', row: ['router'], greedy: [0, 0], t1: [0, 0] },
  { model: 'skill', task: 'count-letter', method: 'gradient', bench: 'methods', table: 'count-letter', row: ['head adapter'], greedy: [37.5, 31.3], t1: [33.3, 31.8] },
  { model: 'skill', task: 'count-letter', method: 'lora', bench: 'methods', table: 'count-letter', row: ['lora'], greedy: [37.5, 37.5], t1: [33.3, 33.3] },
  { model: 'skill', task: 'count-letter', method: 'router', bench: 'methods', table: 'count-letter', row: ['router'], greedy: [37.5, 37.5], t1: [33.3, 33.3] },
  { model: 'reader', task: 'named-format', method: 'gradient', bench: 'methods', table: 'named-format on webgrpo-reader', row: ['head adapter'], greedy: [0, 0], t1: [3.6, 3.6] },
  { model: 'reader', task: 'named-format', method: 'router', bench: 'methods', table: 'named-format on webgrpo-reader', row: ['router'], greedy: [0, 0], t1: [3.6, 3.6] },
  // skill: the adapters trained on the four skill tasks in turn, evaluated per task.
  ...(
    [
      ['add-subtract', 'gradient', 'head adapter, four tasks', [8, 8], [7, 6]],
      ['add-subtract', 'lora', 'full-depth LoRA, four tasks', [8, 4], [7, 4]],
      ['sort-words', 'gradient', 'head adapter, four tasks', [48, 32], [14, 19]],
    ] as const
  ).map(([task, method, run, greedy, t1]): Measurement => ({ model: 'skill', task, method, bench: 'skill', row: [run, task], greedy, t1, schedule: 'trained on the four skill tasks in turn' })),
];

const METHOD_NAMES: Record<string, string> = { exemplars: 'Exemplars', lessons: 'Lessons', gradient: 'The head adapter', lora: 'LoRA', router: 'The router' };

const pct = (x: number) => `${x}%`;
const change = ([before, after]: Change) => (before === after ? `stayed at ${pct(before)}` : after < before ? `fell from ${pct(before)} to ${pct(after)}` : `went from ${pct(before)} to ${pct(after)}`);

/** The sentence a measurement gives. */
export function measuredSentence(m: Measurement): string {
  const why = m.why ? ` (${m.why})` : '';
  const where = [m.schedule, `BENCHMARKS “${m.bench}”`].filter(Boolean).join('; ');
  return `${METHOD_NAMES[m.method] ?? m.method} did not lift ${m.task} on webgrpo-${m.model}${why}: held-out greedy exact match ${change(m.greedy)}, T=1 ${change(m.t1)} (${where}).`;
}

const TINY =
  'webgrpo-tiny has random weights, so every method on it shows the mechanics (sampling, rewards, advantages, updates), not a skill being learnt: webgrpo-skill is the model pretrained on the skill tasks.';

/** Exemplars on named-format: the bundled model made for it (BENCHMARKS "exemplars", greedy Δ over six seed pairs). */
const SKILL_NAMED_FORMAT_EXEMPLARS =
  '; webgrpo-reader (1.7 MB, taught to read worked examples), shown the worked example closest to each prompt, gains 62 to 100 points held-out greedy there under six seed pairs (BENCHMARKS “exemplars”).';

/** The reader shown its whole library: every word in one format (BENCHMARKS "exemplars", the whole-library columns). */
const READER_WHOLE_LIBRARY =
  'Shown its whole library, webgrpo-reader writes every held-out word in one format whatever the code (with a right worked example of every code, 12.5% to 25% held-out greedy on named-format against 100% shown only the closest; BENCHMARKS “exemplars”): set Experiences per prompt to 1.';
/** Lessons on the reader at named-format (BENCHMARKS "exemplars", lessons rows over six seed pairs). */
const READER_LESSONS =
  'Lessons do not teach webgrpo-reader the rule: as its own critic it writes every reply under the critic’s schema and its lessons read like “fig 4 means format #*#”, but it does not copy the task’s code and format into them, so on named-format held-out greedy exact match rose by 0 to 25 points over six seed pairs only by writing every word in one format (BENCHMARKS “exemplars”): use exemplars on this model.';
const READER_OTHER_TASK =
  'webgrpo-reader was taught to read worked examples of named-format-like tasks (a code naming a format); on other tasks what a library does on it was not measured.';

/**
 * The sentence for `method` on `model` (an id of models.ts) and `task`, or null; hub models were
 * not measured. `retrieve` is the run's experiences per prompt (0: the whole library).
 */
export function cannotHelp(method: string, model: string, task: string, retrieve = 0): string | null {
  if (model === 'tiny') return TINY;
  if (model === 'reader' && task === 'named-format') {
    if (method === 'exemplars') return retrieve === 0 ? READER_WHOLE_LIBRARY : null;
    if (method === 'lessons') return READER_LESSONS;
  }
  if (model === 'reader' && task !== 'named-format' && (method === 'exemplars' || method === 'lessons')) return READER_OTHER_TASK;
  const measured = MEASURED.find((m) => m.model === model && m.task === task && m.method === method);
  if (!measured) return null;
  const sentence = measuredSentence(measured);
  return model === 'skill' && task === 'named-format' && method === 'exemplars' ? sentence.replace(/\.$/, SKILL_NAMED_FORMAT_EXEMPLARS) : sentence;
}
