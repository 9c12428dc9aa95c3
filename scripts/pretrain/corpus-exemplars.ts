/**
 * The reader model's continuation corpus (`npm run pretrain -- --reader`, reader.ts), which
 * teaches reading worked examples: chats whose prompt names a format by a verb and a code ("dress 3: owl") under a
 * mapping drawn afresh for every chat, with worked examples of the same mapping rendered exactly
 * as a Training-Free exemplars run renders its library (lib/experience/render.ts
 * `promptWithLibrary`: the exemplars template, `[E3] Task: ...\nAnswer: ...`). No code means the
 * same format in two chats, so the only way to the answer is the example that shares the prompt's
 * code; when none does (or there is none) the reply is the chat's format, a guess from outside.
 *
 * What it keeps from the named-format task's rules (lib/tasks/named-format.ts): nothing. The verb
 * is never "wrap" and the mapping is random per chat, so no code-to-format pair can be memorised;
 * the formats are copy-format's (lib/tasks/skill.ts FORMATS), which the model already writes.
 * Beside them the lessons corpus (corpus-lessons.ts: reading lessons, and the critic's role) and,
 * for the rest, the second phase's corpus (corpus-continue.ts, a fresh seed), so the skill tasks
 * stay in the mix.
 */
import type { ExemplarEntry, ExperienceLibrary } from '../../lib/experience/types.js';
import { promptWithLibrary } from '../../lib/experience/render.js';
import { mulberry32, randomInt, shuffleInPlace, type Rng } from '../../lib/math/random.js';
import { FORMATS, SORT_WORDS } from '../../lib/tasks/skill.js';
import { IM_END_ID } from '../build-model/tokenizer.js';
import { CONTINUE, type ContinueConfig } from './config.js';
import { buildContinuationCorpus } from './corpus-continue.js';
import { chatPromptIds, encodeText, type Example } from './corpus.js';
import { buildLessonCorpus, type LessonCorpusConfig } from './corpus-lessons.js';

export interface ExemplarCorpusConfig extends ContinueConfig {
  /** Share of the corpus that is the reading chats; the rest is the second phase's corpus. */
  readingShare: number;
  /** Codes a reading chat's verb may carry (1 to this). */
  codes: number;
  /** Share of reading chats with no worked example at all (the first step of a run has an empty library). */
  bareShare: number;
  /** Share of the others where one worked example shares the prompt's code. */
  matchShare: number;
  /**
   * Most distinct codes among the other worked examples. A run's library often holds several
   * answers of one code (the one the model guessed right most often), so the corpus does too:
   * copying the format most examples show is then wrong, and only the code's own example is right.
   */
  distractorCodes: number;
  /** The lessons corpus (lesson reading and critic chats), drawn from the same codes. */
  lessons: Omit<LessonCorpusConfig, 'seed' | 'codes'>;
}

export const EXEMPLAR_CONTINUE: ExemplarCorpusConfig = {
  ...CONTINUE,
  seed: 30,
  steps: 1600,
  lr: 2e-3,
  warmup: 20,
  exemplarShare: 0.2,
  maxExemplars: 8,
  readingShare: 0.3,
  codes: 9,
  bareShare: 0.1,
  matchShare: 0.8,
  distractorCodes: 3,
  lessons: { reading: 10000, groups: 1000, summariesPerGroup: 2, maxLessons: 8, matchShare: 0.8, criticMaxNewTokens: 128, groupSize: 8 },
};

/** Verbs of the reading chats: any word but the named-format task's. */
const VERBS = SORT_WORDS.filter((w) => w !== 'wrap');

/** One reading chat: its rendered prompt and reply. */
export function readingChat(config: ExemplarCorpusConfig, random: Rng): { prompt: string; reply: string } {
  const verb = VERBS[randomInt(random, VERBS.length)];
  const mapping = Array.from({ length: config.codes }, () => FORMATS[randomInt(random, FORMATS.length)]);
  const problem = (code: number, word: string) => ({ item: `${verb} ${code}: ${word}`, output: mapping[code - 1].replaceAll('*', word) });
  const code = 1 + randomInt(random, config.codes);
  const target = problem(code, SORT_WORDS[randomInt(random, SORT_WORDS.length)]);
  const shown: Array<{ item: string; output: string }> = [];
  if (random() >= config.bareShare) {
    const count = 1 + randomInt(random, config.maxExemplars);
    const match = random() < config.matchShare;
    if (match) shown.push(problem(code, SORT_WORDS[randomInt(random, SORT_WORDS.length)]));
    const others = shuffleInPlace(random, Array.from({ length: config.codes }, (_, i) => i + 1).filter((c) => c !== code)).slice(0, 1 + randomInt(random, config.distractorCodes));
    // Bounded tries: with few codes left, the other examples may not all be distinct.
    for (let tries = 0; shown.length < count && tries < 50; tries++) {
      // With a match, its code may be shown more than once, as a library can hold two of a code.
      const other = match && random() < 0.2 ? code : others[randomInt(random, others.length)];
      const candidate = problem(other, SORT_WORDS[randomInt(random, SORT_WORDS.length)]);
      if (candidate.item !== target.item && !shown.some((s) => s.item === candidate.item)) shown.push(candidate);
    }
    shuffleInPlace(random, shown);
  }
  const ids = new Set<number>();
  while (ids.size < shown.length) ids.add(randomInt(random, 24));
  const exemplars: ExemplarEntry[] = shown.map((s, i) => ({ id: `E${[...ids][i]}`, item: s.item, output: s.output, score: 1, createdStep: 0, updatedStep: 0 }));
  const library: ExperienceLibrary = { nextId: 24, entries: [], exemplars };
  const { prompt } = promptWithLibrary({ messages: [{ role: 'user', content: target.item }] }, library);
  return { prompt: prompt.messages![0].content, reply: target.output };
}

/**
 * The reader's whole corpus: the reading chats (`readingShare` of the updates' chats), the lessons
 * corpus (corpus-lessons.ts, its own seed), and the second phase's corpus for the rest, shuffled.
 */
export async function buildExemplarCorpus(config: ExemplarCorpusConfig): Promise<Example[]> {
  const random = mulberry32(config.seed);
  const count = config.steps * config.batch;
  const reading = Math.round(count * config.readingShare);
  const lessons = await buildLessonCorpus({ ...config.lessons, seed: config.seed + 1, codes: config.codes });
  if (reading + lessons.length > count) throw new RangeError(`the reading (${reading}) and lessons (${lessons.length}) chats exceed the ${count} the updates take`);
  const examples: Example[] = [...buildContinuationCorpus(config).slice(0, count - reading - lessons.length), ...lessons];
  for (let i = 0; i < reading; i++) {
    const { prompt, reply } = readingChat(config, random);
    examples.push({ task: 'reading', promptIds: chatPromptIds(prompt), replyIds: [...encodeText(reply), IM_END_ID], correct: true });
  }
  shuffleInPlace(random, examples);
  return examples;
}
