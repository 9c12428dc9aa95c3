/**
 * The reader's lessons corpus (reader.ts, beside corpus-exemplars.ts): the model learns to read a
 * lesson that names a format and to write such lessons as its own critic. Every chat draws a
 * verb (never named-format's "wrap") and a code-to-format mapping afresh, as the reading chats do,
 * so no code's format is in the weights; the lessons carry it.
 *
 *  - **Lesson reading**: "<verb> <code>: <word>" under a library of lessons rendered exactly as a
 *    lessons run renders it (`promptWithLibrary`, `[G3] dress 4 means format #*#`), the reply the
 *    word in the format the lesson of that code names (a guess where no lesson does).
 *  - **Critic chats**: the critic's four steps asked through the product's own code
 *    (`critiqueGroup`, `mergeAndApply`: its templates, its cuts to the context, the constrained
 *    JSON request) of a scripted critic that records each prompt and answers what a careful critic
 *    would: a one-line summary per attempt, one lesson naming the reference answer's format, an
 *    ADD (or an UPDATE of the code's wrong lesson, or NONE for one the library has), and the merge
 *    passing the edits through. A lesson is a readable sentence that names the rule, in the form
 *    copy-format's prompts already use ("format #*#").
 */
import type { ChatMessage, Policy } from '../../lib/core/policy.js';
import type { ExperienceEntry, ExperienceLibrary, ExperienceOperation } from '../../lib/experience/types.js';
import { promptWithLibrary } from '../../lib/experience/render.js';
import { mulberry32, randomInt, shuffleInPlace, type Rng } from '../../lib/math/random.js';
import { critiqueGroup, mergeAndApply } from '../../lib/methods/training-free/critique.js';
import type { CriticConfig } from '../../lib/methods/training-free/critic.js';
import { DEFAULTS, resolveTemplates } from '../../lib/methods/training-free/options.js';
import { FORMATS, SORT_WORDS } from '../../lib/tasks/skill.js';
import { similarity } from '../../lib/tasks/text.js';
import { BOS_ID, IM_END_ID, SPECIAL_TOKENS } from '../build-model/tokenizer.js';
import { chatPromptIds, encodeText, type Example } from './corpus.js';

export interface LessonCorpusConfig {
  seed: number;
  /** Lesson-reading chats. */
  reading: number;
  /** Critiqued groups (each gives `summariesPerGroup` summary chats, a critique, a group update and, unless NONE, a merge). */
  groups: number;
  summariesPerGroup: number;
  /** Codes a chat's verb may carry (1 to this). */
  codes: number;
  /** Most lessons in a reading chat's library. */
  maxLessons: number;
  /** Share of reading chats whose library has a lesson of the prompt's code. */
  matchShare: number;
  /** The critic's reply limit, as the lessons run sets it (READER_RUN.criticMaxNewTokens). */
  criticMaxNewTokens: number;
  /** Attempts per critiqued group (the run's groupSize). */
  groupSize: number;
}

/** A lesson that names a code's format. */
export const lessonText = (verb: string, code: number, format: string): string => `${verb} ${code} means format ${format}`;

const VERBS = SORT_WORDS.filter((w) => w !== 'wrap');
const IM_START_ID = SPECIAL_TOKENS.indexOf('<|im_start|>');

/** One chat's draw: a verb and a mapping of codes 1..codes to formats. */
function drawChat(config: LessonCorpusConfig, random: Rng) {
  const verb = VERBS[randomInt(random, VERBS.length)];
  const mapping = Array.from({ length: config.codes }, () => FORMATS[randomInt(random, FORMATS.length)]);
  const word = () => SORT_WORDS[randomInt(random, SORT_WORDS.length)];
  const code = () => 1 + randomInt(random, config.codes);
  return { verb, mapping, word, code };
}

/** A library of lessons for `codes` of the mapping, under distinct ids below nextId. */
function lessonLibrary(random: Rng, lessons: Array<{ code: number; text: string }>): ExperienceLibrary {
  const ids = new Set<number>();
  while (ids.size < lessons.length) ids.add(randomInt(random, 24));
  const entries: ExperienceEntry[] = lessons.map((l, i) => ({ id: `G${[...ids][i]}`, text: l.text, createdStep: 1, updatedStep: 1 }));
  return { nextId: 24, entries, exemplars: [] };
}

export function lessonReadingChat(config: LessonCorpusConfig, random: Rng): { prompt: string; reply: string } {
  const { verb, mapping, word, code: drawCode } = drawChat(config, random);
  const code = drawCode();
  const item = `${verb} ${code}: ${word()}`;
  const target = mapping[code - 1].replaceAll('*', item.slice(item.indexOf(': ') + 2));
  const count = randomInt(random, config.maxLessons + 1);
  const codes = new Set<number>();
  if (count > 0 && random() < config.matchShare) codes.add(code);
  for (let tries = 0; codes.size < count && tries < 50; tries++) {
    const other = drawCode();
    if (other !== code) codes.add(other);
  }
  const library = lessonLibrary(random, shuffleInPlace(random, [...codes]).map((c) => ({ code: c, text: lessonText(verb, c, mapping[c - 1]) })));
  const { prompt } = promptWithLibrary({ messages: [{ role: 'user', content: item }] }, library);
  return { prompt: prompt.messages![0].content, reply: target };
}

/** The ChatML ids of `messages` with the generation prompt (tokenizer.ts CHAT_TEMPLATE). */
function chatIds(messages: readonly ChatMessage[]): number[] {
  const ids = [BOS_ID];
  for (const m of messages) ids.push(IM_START_ID, ...encodeText(`${m.role}\n${m.content}`), IM_END_ID, ...encodeText('\n'));
  return [...ids, IM_START_ID, ...encodeText('assistant\n')];
}

/** What a careful critic answers to one of the four prompts (which one, read off its template's opening). */
function criticAnswer(prompt: string): string {
  const field = (name: string) => new RegExp(`${name}:\\n?(.*)\\n`).exec(prompt)?.[1]?.trim() ?? '';
  const task = field('Task');
  const reference = field('Reference answer');
  const word = task.slice(task.indexOf(': ') + 2);
  const [verb, code] = task.split(/[ :]+/);
  const lesson = lessonText(verb, Number(code), reference.replaceAll(word, '*'));
  const library = [...prompt.matchAll(/^\[(G\d+)\] (.*)$/gm)].map((m) => ({ id: m[1], text: m[2] }));
  if (prompt.startsWith('Here is one attempt')) {
    const attempt = /Attempt:\n([\s\S]*?)\n\nReply with/.exec(prompt)?.[1] ?? '';
    return attempt === reference ? `${attempt} is the reference answer.` : `${attempt} is not the reference answer ${reference}.`;
  }
  if (prompt.startsWith('Several attempts')) return JSON.stringify({ lessons: [lesson] });
  if (prompt.startsWith('Decide how')) {
    const proposed = [...prompt.matchAll(/^\d+\. (.*)$/gm)].map((m) => m[1]);
    const operations = proposed.map((text): ExperienceOperation => {
      if (library.some((e) => e.text === text)) return { operation: 'NONE' };
      const head = text.slice(0, text.indexOf(' means '));
      const stale = library.find((e) => e.text.startsWith(`${head} means `));
      return stale ? { operation: 'UPDATE', id: stale.id, content: text } : { operation: 'ADD', content: text };
    });
    return JSON.stringify({ operations });
  }
  if (prompt.startsWith('Several reviewers')) {
    const proposed = [...prompt.matchAll(/^ {2}(\{.*\}),?$/gm)].map((m) => JSON.parse(m[1]) as ExperienceOperation);
    const seen = new Set<string>();
    return JSON.stringify({ operations: proposed.filter((op) => !seen.has(JSON.stringify(op)) && seen.add(JSON.stringify(op))) });
  }
  throw new Error(`no scripted answer for the critic prompt ${JSON.stringify(prompt.slice(0, 60))}`);
}

/** The corpus part a critic prompt belongs to, by its template's opening. */
const STAGES: Array<[string, string]> = [
  ['Here is one attempt', 'critic-summary'],
  ['Several attempts', 'critic-critique'],
  ['Decide how', 'critic-update'],
  ['Several reviewers', 'critic-merge'],
];

/** A critic that answers `criticAnswer` and records every exchange; its context is the reader's (2048 characters). */
function scriptedCritic(recorded: Example[]): Policy {
  const critic = {
    info: { model: 'scripted-critic', backend: 'recorded', responseFormats: true, maxPositions: 2048 },
    encode: async (text: string) => [...text].map(() => 0),
    async generateGroup(request: { messages: ChatMessage[] }) {
      const prompt = request.messages.at(-1)!.content;
      const text = criticAnswer(prompt);
      const task = STAGES.find(([opening]) => prompt.startsWith(opening))![1];
      recorded.push({ task, promptIds: chatIds(request.messages), replyIds: [...encodeText(text), IM_END_ID], correct: true });
      return { completions: [{ text }] };
    },
  };
  return critic as unknown as Policy;
}

export async function buildLessonCorpus(config: LessonCorpusConfig): Promise<Example[]> {
  const random = mulberry32(config.seed);
  const examples: Example[] = [];
  for (let i = 0; i < config.reading; i++) {
    const { prompt, reply } = lessonReadingChat(config, random);
    examples.push({ task: 'lesson-reading', promptIds: chatPromptIds(prompt), replyIds: [...encodeText(reply), IM_END_ID], correct: true });
  }
  const criticConfig: CriticConfig = {
    templates: resolveTemplates('lessons', undefined),
    criticTemperature: 0,
    criticMaxNewTokens: config.criticMaxNewTokens,
    seed: 0,
    givenGroundTruth: true,
    lessonsPerGroup: DEFAULTS.lessonsPerGroup,
    maxExperienceLength: DEFAULTS.maxExperienceLength,
  };
  for (let g = 0; g < config.groups; g++) {
    const { verb, mapping, word, code: drawCode } = drawChat(config, random);
    const code = drawCode();
    const w = word();
    const reference = mapping[code - 1].replaceAll('*', w);
    const right = 0.1 + 0.5 * random();
    const rollouts = Array.from({ length: config.groupSize }, () => {
      const text = random() < right ? reference : FORMATS[randomInt(random, FORMATS.length)].replaceAll('*', w);
      return { text, reward: (text === reference ? 1 : 0) + 0.5 * similarity(text, reference) };
    });
    // A library of other codes' lessons, sometimes with this code's (right: NONE; another format: UPDATE).
    const codes = shuffleInPlace(random, Array.from({ length: config.codes }, (_, c) => c + 1).filter((c) => c !== code)).slice(0, randomInt(random, 5));
    const lessons = codes.map((c) => ({ code: c, text: lessonText(verb, c, mapping[c - 1]) }));
    const own = random();
    if (own < 0.15) lessons.push({ code, text: lessonText(verb, code, mapping[code - 1]) });
    else if (own < 0.3) lessons.push({ code, text: lessonText(verb, code, FORMATS.find((f) => f !== mapping[code - 1] && random() < 0.2) ?? '[*]') });
    const library = lessonLibrary(random, shuffleInPlace(random, lessons));

    const recorded: Example[] = [];
    const ctx = { critic: scriptedCritic(recorded), config: criticConfig, signal: new AbortController().signal };
    // The scripted answers always parse and fit: a warning here is a bug in this file.
    const warn = async (_stage: string, message: string) => {
      throw new Error(`scripted critic: ${message}`);
    };
    const critiqued = await critiqueGroup(ctx, { task: `${verb} ${code}: ${w}`, reference, rollouts }, library, [g], { warn });
    await mergeAndApply(ctx, critiqued.groupUpdate?.parsed ?? [], library, 2);
    // A few of the summaries (eight per group would crowd out the rest), every other step.
    const summaries = shuffleInPlace(random, recorded.filter((e) => e.task === 'critic-summary')).slice(0, config.summariesPerGroup);
    examples.push(...summaries, ...recorded.filter((e) => e.task !== 'critic-summary'));
  }
  return examples;
}
