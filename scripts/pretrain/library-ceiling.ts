/**
 * The most a library can be worth to a model on named-format, and what a model that ignores the
 * code scores: held-out greedy exact match under the best library a run could learn (one right
 * worked example of every code, from the training split; or one right lesson of every code, in
 * the form the reader's corpus teaches), shown whole or only the entry closest to the prompt
 * (`retrieve: 1`), and under writing every word in one format. Shown whole, a model that reads
 * its library by the code approaches 100% and one that copies any format it sees scores about
 * one format's share; shown the closest entry, copying is reading. Beside library-gain.ts (what a
 * run's own library is worth) in `npm run bench -- exemplars`.
 */
import type { Policy } from '../../lib/core/policy.js';
import { promptWithLibrary } from '../../lib/experience/render.js';
import type { ExperienceLibrary } from '../../lib/experience/types.js';
import { NAMED_FORMATS, namedFormat } from '../../lib/tasks/named-format.js';
import { MAX_REPLY_TOKENS } from './accuracy.js';
import { lessonText } from './corpus-lessons.js';

export interface CeilingReading {
  /** Greedy held-out exact match under the library. */
  accuracy: number;
  /** How many replies are written in each of the codes' formats (by format; other replies under "other"). */
  formats: Record<string, number>;
}

export interface LibraryReadings {
  exemplars: CeilingReading;
  lessons: CeilingReading;
}

export interface LibraryCeiling {
  /** Every entry in the prompt. */
  whole: LibraryReadings;
  /** Only the entry closest to the prompt (`retrieve: 1`). */
  closest: LibraryReadings;
  /** The best score of one format for every held-out word, and that format. */
  oneFormat: { format: string; accuracy: number };
}

const codeOf = (prompt: string): number => Number(/ (\d+): /.exec(prompt)![1]);

/** One right worked example of every code: the first training-split problem that asks it. */
export function fullExemplarLibrary(seed: number): ExperienceLibrary {
  const train = namedFormat.dataset({ size: 200, seed, split: 'train' });
  const exemplars = NAMED_FORMATS.map((_, i) => {
    const item = train.find((p) => codeOf(p.messages![0].content) === i + 1);
    if (!item) throw new RangeError(`no training problem of code ${i + 1} among 200 (seed ${seed})`);
    return { id: `E${i + 1}`, item: item.messages![0].content, output: item.answer as string, score: 1.5, createdStep: 1, updatedStep: 1 };
  });
  return { nextId: exemplars.length + 1, entries: [], exemplars };
}

/** One right lesson of every code. */
export function fullLessonLibrary(): ExperienceLibrary {
  const entries = NAMED_FORMATS.map((format, i) => ({ id: `G${i + 1}`, text: lessonText('wrap', i + 1, format), createdStep: 1, updatedStep: 1 }));
  return { nextId: entries.length + 1, entries, exemplars: [] };
}

/** The format a reply is written in, if it is one of the codes' formats around the word. */
const formatOfReply = (reply: string, word: string): string => NAMED_FORMATS.find((f) => f.replaceAll('*', word) === reply) ?? 'other';

async function readWith(policy: Policy, heldOut: ReturnType<typeof namedFormat.dataset>, library: ExperienceLibrary, retrieve: number): Promise<CeilingReading> {
  let right = 0;
  const formats: Record<string, number> = {};
  for (const item of heldOut) {
    const { prompt } = promptWithLibrary({ messages: item.messages }, library, { retrieve });
    const group = await policy.generateGroup({ ...prompt, groupSize: 1, temperature: 0, maxNewTokens: MAX_REPLY_TOKENS });
    const reply = group.completions[0].text.trim();
    if (reply === item.answer) right++;
    const format = formatOfReply(reply, item.messages![0].content.slice(item.messages![0].content.indexOf(': ') + 2));
    formats[format] = (formats[format] ?? 0) + 1;
  }
  return { accuracy: right / heldOut.length, formats };
}

export async function libraryCeiling(policy: Policy, options: { trainSeed: number; heldOut: { size: number; seed: number } }): Promise<LibraryCeiling> {
  const heldOut = namedFormat.dataset(options.heldOut);
  const shares = NAMED_FORMATS.map((_, i) => heldOut.filter((item) => codeOf(item.messages![0].content) === i + 1).length / heldOut.length);
  const best = shares.indexOf(Math.max(...shares));
  const readings = async (retrieve: number): Promise<LibraryReadings> => ({
    exemplars: await readWith(policy, heldOut, fullExemplarLibrary(options.trainSeed), retrieve),
    lessons: await readWith(policy, heldOut, fullLessonLibrary(), retrieve),
  });
  return {
    whole: await readings(0),
    closest: await readings(1),
    oneFormat: { format: NAMED_FORMATS[best], accuracy: shares[best] },
  };
}
