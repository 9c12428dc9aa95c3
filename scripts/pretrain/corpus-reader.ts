/**
 * The reader's continuation corpus (`npm run pretrain -- --reader`, public/models/webgrpo-reader):
 * chats that teach the skill model to read experience and to write it.
 *
 *  - **Reading worked examples**: "<verb> <code>: <word>" under a code-to-format mapping drawn
 *    afresh for every chat (distinct formats per code, copy-format's formats), with 0 to
 *    `maxShown` worked examples of the same mapping rendered exactly as a Training-Free exemplars
 *    run renders its library (lib/experience/render.ts `promptWithLibrary`). Several examples may
 *    share a code, as a run's library holds them.
 *  - **Reading lessons**: the same chats with the library as lessons in the lessons template
 *    ("[G3] wrap 4: write the word as #word#."), the sentence the critic below writes.
 *  - **Being the critic**: the four critic prompts of a lessons run (a summary per attempt, the
 *    group critique, the group update, the batch merge), produced by the method's own code
 *    (lib/methods/training-free/critique.ts `critiqueGroup`, `mergeAndApply`) against a scripted
 *    critic that answers as the model should: short summaries, one lesson naming the code's rule,
 *    ADD / UPDATE / NONE against the listed library, a merge that keeps one operation per code.
 *    The prompts are the run's, cut to the model's context by the run's budget (budget.ts), and
 *    the structured answers are the bare JSON the constrained prompt asks for.
 *
 * What it keeps from the named-format task's rules (lib/tasks/named-format.ts): nothing. Every
 * chat's mapping is random, so no code-to-format pair can be memorised, "wrap" included among
 * the verbs; where no example or lesson names the prompt's code the reply is the chat's format
 * for it, a guess from outside, so sampling explores the formats. The rest of the corpus is the
 * second phase's (corpus-continue.ts, a fresh seed), so the skill tasks stay in the mix.
 */
import type { ChatMessage, GenerateGroupOptions, GroupResult, Policy } from '../../lib/core/policy.js';
import { promptWithLibrary } from '../../lib/experience/render.js';
import type { ExemplarEntry, ExperienceEntry, ExperienceLibrary, ExperienceOperation } from '../../lib/experience/types.js';
import { mulberry32, randomInt, shuffleInPlace, type Rng } from '../../lib/math/random.js';
import type { CriticConfig, CriticContext } from '../../lib/methods/training-free/critic.js';
import { critiqueGroup, mergeAndApply } from '../../lib/methods/training-free/critique.js';
import { DEFAULTS, resolveTemplates } from '../../lib/methods/training-free/options.js';
import { FORMATS, SORT_WORDS } from '../../lib/tasks/skill.js';
import { similarity } from '../../lib/tasks/text.js';
import { BOS_ID, IM_END_ID } from '../build-model/tokenizer.js';
import { CONTINUE, type ContinueConfig } from './config.js';
import { buildContinuationCorpus } from './corpus-continue.js';
import { encodeText, type Example } from './corpus.js';

export interface ReaderCorpusConfig extends ContinueConfig {
  /** Shares of the corpus: exemplar reading, lesson reading, critic chats; the rest is phase 2's. */
  exemplarReadingShare: number;
  lessonReadingShare: number;
  criticShare: number;
  /** Codes a chat's mapping has (1 to this). */
  codes: number;
  /** Most worked examples or lessons in one prompt. */
  maxShown: number;
  /** Share of reading chats with an empty library (a run's first step). */
  bareShare: number;
  /** Share of the others where the library names the prompt's code. */
  matchShare: number;
  /** The experiences' token budget of the runs the reader is made for (characters: one token each). */
  experienceTokenBudget: number;
  /** Reply tokens of a critic call in those runs. */
  criticMaxNewTokens: number;
  /** The context of the model the critic prompts are cut for. */
  context: number;
}

export const READER: ReaderCorpusConfig = {
  ...CONTINUE,
  seed: 28,
  steps: 500,
  lr: 1.5e-3,
  warmup: 20,
  lrFloor: 0.1,
  exemplarReadingShare: 0.4,
  lessonReadingShare: 0.2,
  criticShare: 0.12,
  codes: 9,
  maxShown: 16,
  bareShare: 0.08,
  matchShare: 0.85,
  experienceTokenBudget: 1024,
  criticMaxNewTokens: 96,
  context: 2048,
};

/** Verbs: any sort-words word, named-format's "wrap" among them (the mapping is random per chat). */
const VERBS = SORT_WORDS;

/** A chat's rule book: a verb and a distinct format per code. */
interface Mapping {
  verb: string;
  formats: string[];
}

function drawMapping(config: ReaderCorpusConfig, random: Rng): Mapping {
  const formats = [...FORMATS];
  shuffleInPlace(random, formats);
  return { verb: VERBS[randomInt(random, VERBS.length)], formats: formats.slice(0, config.codes) };
}

const word = (random: Rng) => SORT_WORDS[randomInt(random, SORT_WORDS.length)];
const problem = (m: Mapping, code: number, w: string) => ({ item: `${m.verb} ${code}: ${w}`, output: m.formats[code - 1].replaceAll('*', w) });

/** The lesson that names a code's rule: "wrap 4: write the word as #word#." */
export function ruleLesson(verb: string, code: number, format: string): string {
  return `${verb} ${code}: write the word as ${format.replaceAll('*', 'word')}.`;
}

/** The rule lesson read off a task ("wrap 4: hen") and its reference answer ("#hen#"). */
export function lessonFromReference(task: string, reference: string): string {
  const match = /^(\S+) (\d+): (\S+)$/.exec(task);
  if (!match) return `Answer like the reference: ${reference}.`;
  const [, verb, code, w] = match;
  return `${verb} ${code}: write the word as ${reference.replaceAll(w, 'word')}.`;
}

/** Distinct ids from a run's range, so no id or position gives the answer away. */
function ids(count: number, random: Rng, range = 48): number[] {
  const chosen = new Set<number>();
  while (chosen.size < count) chosen.add(randomInt(random, range));
  return [...chosen];
}

/** Which codes a library shows: the prompt's with `matchShare`, others drawn with repeats (a run keeps several per code). */
function shownCodes(config: ReaderCorpusConfig, code: number, random: Rng, distinct: boolean): number[] {
  if (random() < config.bareShare) return [];
  const count = 1 + randomInt(random, config.maxShown);
  const match = random() < config.matchShare;
  const codes: number[] = match ? [code] : [];
  for (let tries = 0; codes.length < count && tries < 100; tries++) {
    const other = 1 + randomInt(random, config.codes);
    if (other === code && !match) continue;
    if (distinct && codes.includes(other)) continue;
    codes.push(other);
  }
  shuffleInPlace(random, codes);
  return codes;
}

/** One exemplar-reading chat: the rendered prompt and the reply. */
export function exemplarReadingChat(config: ReaderCorpusConfig, random: Rng): { prompt: string; reply: string } {
  const mapping = drawMapping(config, random);
  const code = 1 + randomInt(random, config.codes);
  const target = problem(mapping, code, word(random));
  const shown: Array<{ item: string; output: string }> = [];
  for (const c of shownCodes(config, code, random, false)) {
    const candidate = problem(mapping, c, word(random));
    if (candidate.item !== target.item && !shown.some((s) => s.item === candidate.item)) shown.push(candidate);
  }
  const exemplars: ExemplarEntry[] = ids(shown.length, random).map((id, i) => ({ id: `E${id}`, item: shown[i].item, output: shown[i].output, score: 1.5, createdStep: 0, updatedStep: 0 }));
  return render(config, target, { nextId: 48, entries: [], exemplars });
}

/** One lesson-reading chat: lessons naming the rules of some codes (one per code, as a run keeps them). */
export function lessonReadingChat(config: ReaderCorpusConfig, random: Rng): { prompt: string; reply: string } {
  const mapping = drawMapping(config, random);
  const code = 1 + randomInt(random, config.codes);
  const target = problem(mapping, code, word(random));
  const codes = shownCodes(config, code, random, true);
  const entries: ExperienceEntry[] = ids(codes.length, random).map((id, i) => ({
    id: `G${id}`,
    text: ruleLesson(mapping.verb, codes[i], mapping.formats[codes[i] - 1]),
    createdStep: 0,
    updatedStep: 0,
  }));
  return render(config, target, { nextId: 48, entries, exemplars: [] });
}

function render(config: ReaderCorpusConfig, target: { item: string; output: string }, library: ExperienceLibrary): { prompt: string; reply: string } {
  const { prompt } = promptWithLibrary({ messages: [{ role: 'user', content: target.item }] }, library, {
    tokenBudget: config.experienceTokenBudget,
    countTokens: (text) => text.length,
  });
  return { prompt: prompt.messages![0].content, reply: target.output };
}

/** The chat template's prompt ids for `messages` (scripts/build-model/tokenizer.ts CHAT_TEMPLATE), with the generation prompt. */
export function chatIds(messages: readonly ChatMessage[]): number[] {
  const ids = [BOS_ID];
  for (const m of messages) ids.push(IM_START, ...encodeText(`${m.role}\n${m.content}`), IM_END_ID, ...encodeText('\n'));
  ids.push(IM_START, ...encodeText('assistant\n'));
  return ids;
}
const IM_START = 4;

/** What the critic should answer to one of the method's critic prompts (the stage read off the template's first words). */
function criticAnswer(prompt: string, lesson: string, libraryOf: () => ExperienceLibrary): string {
  const field = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(prompt)?.[1] ?? '';
  if (prompt.startsWith('Here is one attempt')) {
    const reference = field('Reference answer');
    const attempt = prompt.slice(prompt.indexOf('Attempt:\n') + 'Attempt:\n'.length, prompt.lastIndexOf('\n\nReply with')).trim();
    return attempt === reference ? `Right: the reference answer ${reference}.` : `Wrong: the reference answer is ${reference}.`;
  }
  if (prompt.startsWith('Several attempts')) return JSON.stringify({ lessons: [lesson] }).replace('{"lessons":', '{"lessons": ');
  const operations = prompt.startsWith('Decide how') ? [operationFor(lesson, libraryOf())] : mergedOperations(prompt);
  return `{"operations": [${operations.map(operationJson).join(', ')}]}`;
}

/** One lesson against the library: NONE when it is there, UPDATE of the entry for the same code, else ADD. */
function operationFor(lesson: string, library: ExperienceLibrary): ExperienceOperation {
  const key = ruleKey(lesson);
  const same = library.entries.find((e) => ruleKey(e.text) === key);
  if (!same) return { operation: 'ADD', content: lesson };
  return same.text === lesson ? { operation: 'NONE' } : { operation: 'UPDATE', id: same.id, content: lesson };
}

/** The batch merge: the proposed operations (listed in the prompt), one per code, the first kept. */
function mergedOperations(prompt: string): ExperienceOperation[] {
  const listed = prompt.slice(prompt.indexOf('Proposed operations:\n') + 'Proposed operations:\n'.length, prompt.indexOf('\n\nRules:'));
  const operations = (JSON.parse(listed) as ExperienceOperation[]).filter((op) => op.operation !== 'NONE');
  const seen = new Set<string>();
  return operations.filter((op) => {
    const key = op.content !== undefined ? ruleKey(op.content) : (op.id ?? '');
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

const ruleKey = (lesson: string) => lesson.slice(0, lesson.indexOf(':'));

function operationJson(op: ExperienceOperation): string {
  if (op.operation === 'ADD') return `{"operation": "ADD", "content": ${JSON.stringify(op.content ?? '')}}`;
  if (op.operation === 'UPDATE') return `{"operation": "UPDATE", "id": "${op.id}", "content": ${JSON.stringify(op.content ?? '')}}`;
  if (op.operation === 'DELETE') return `{"operation": "DELETE", "id": "${op.id}"}`;
  return '{"operation": "NONE"}';
}

/** A wrong attempt at `answer` for a word: another format, a dropped bracket, or the bare word. */
function wrongAttempt(m: Mapping, code: number, w: string, random: Rng): string {
  const roll = random();
  if (roll < 0.6) return FORMATS[randomInt(random, FORMATS.length)].replaceAll('*', w);
  if (roll < 0.8) return m.formats[code - 1].replaceAll('*', w).slice(1);
  return w;
}

/**
 * One step of a lessons run on one mapping, as the method runs it: four groups of attempts
 * critiqued against the library (summaries, critique, group update), then the batch merge and the
 * library's update. Returns the critic chats asked along the way (one summary per group kept:
 * they are alike) and the library after the step.
 */
async function criticEpisode(config: ReaderCorpusConfig, mapping: Mapping, library: ExperienceLibrary, step: number, random: Rng): Promise<{ chats: Example[]; library: ExperienceLibrary }> {
  const chats: Example[] = [];
  let lesson = '';
  let current = library;
  let summariesKept = 0;
  const critic: Policy = {
    info: { model: 'scripted-critic', backend: 'scripted', responseFormats: true, maxPositions: config.context },
    encode: async (text) => encodeText(text),
    async generateGroup(options: GenerateGroupOptions): Promise<GroupResult> {
      const messages = options.messages!;
      const prompt = messages.at(-1)!.content;
      const reply = criticAnswer(prompt, lesson, () => current);
      const isSummary = prompt.startsWith('Here is one attempt');
      if (!isSummary || summariesKept++ === 0) chats.push({ task: 'critic', promptIds: chatIds(messages), replyIds: [...encodeText(reply), IM_END_ID], correct: true });
      return { promptTokenIds: [], completions: [{ text: reply, tokenIds: [], logprobs: [], finishReason: 'stop' }], usage: { promptTokens: 0, completionTokens: 0 } } as GroupResult;
    },
    dispose: async () => undefined,
  };
  const criticConfig: CriticConfig = {
    templates: resolveTemplates('lessons', undefined),
    criticTemperature: 0,
    criticMaxNewTokens: config.criticMaxNewTokens,
    seed: 0,
    givenGroundTruth: true,
    lessonsPerGroup: DEFAULTS.lessonsPerGroup,
    maxExperienceLength: DEFAULTS.maxExperienceLength,
  };
  const ctx: CriticContext = { critic, config: criticConfig, signal: new AbortController().signal };
  const operations: ExperienceOperation[] = [];
  for (let g = 0; g < 4; g++) {
    const code = 1 + randomInt(random, config.codes);
    const target = problem(mapping, code, word(random));
    const right = 0.1 + 0.6 * random();
    const texts = Array.from({ length: 8 }, () => (random() < right ? target.output : wrongAttempt(mapping, code, target.item.slice(target.item.indexOf(': ') + 2), random)));
    const rollouts = texts.map((text) => ({ text, reward: (text === target.output ? 1 : 0) + 0.5 * similarity(text, target.output) }));
    if (new Set(rollouts.map((r) => r.reward)).size < 2) continue; // the run skips groups whose rewards do not differ
    lesson = lessonFromReference(target.item, target.output);
    summariesKept = 0;
    const critiqued = await critiqueGroup(ctx, { task: target.item, reference: target.output, rollouts }, current, [step, g], { warn: async () => undefined });
    operations.push(...(critiqued.groupUpdate?.parsed ?? []));
  }
  const batch = await mergeAndApply(ctx, operations, current, step);
  current = batch.library;
  return { chats, library: current };
}

/** Critic chats from lessons runs on fresh mappings, each a few steps long so libraries grow as a run's do. */
async function criticChats(config: ReaderCorpusConfig, count: number, random: Rng): Promise<Example[]> {
  const chats: Example[] = [];
  while (chats.length < count) {
    const mapping = drawMapping(config, random);
    let library: ExperienceLibrary = { nextId: 0, entries: [], exemplars: [] };
    const steps = 1 + randomInt(random, 4);
    for (let step = 1; step <= steps && chats.length < count; step++) {
      const episode = await criticEpisode(config, mapping, library, step, random);
      chats.push(...episode.chats.slice(0, count - chats.length));
      library = episode.library;
    }
  }
  return chats;
}

export async function buildReaderCorpus(config: ReaderCorpusConfig): Promise<Example[]> {
  const random = mulberry32(config.seed);
  const count = config.steps * config.batch;
  const exemplarReading = Math.round(count * config.exemplarReadingShare);
  const lessonReading = Math.round(count * config.lessonReadingShare);
  const critic = Math.round(count * config.criticShare);
  const examples: Example[] = buildContinuationCorpus(config).slice(0, count - exemplarReading - lessonReading - critic);
  const reading = (chat: { prompt: string; reply: string }, task: string): Example => ({
    task,
    promptIds: chatIds([{ role: 'user', content: chat.prompt }]),
    replyIds: [...encodeText(chat.reply), IM_END_ID],
    correct: true,
  });
  for (let i = 0; i < exemplarReading; i++) examples.push(reading(exemplarReadingChat(config, random), 'reading-exemplars'));
  for (let i = 0; i < lessonReading; i++) examples.push(reading(lessonReadingChat(config, random), 'reading-lessons'));
  examples.push(...(await criticChats(config, critic, random)));
  shuffleInPlace(random, examples);
  return examples;
}
