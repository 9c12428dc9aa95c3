/**
 * `namedFormat` ("named-format"): write a word in the format a code number names ("wrap 4: owl" ->
 * "#owl#"). The prompt names the format but never shows it, and each code's format is fixed, so
 * the rule is knowledge a prompt alone does not carry: a model learns it from rewarded answers,
 * and an experience library (a worked example of a code, or a lesson naming its format) carries
 * it to new words. The formats are copy-format's, which the bundled skill model writes when the
 * prompt shows them.
 *
 * The split is the skill tasks' (`splitOf` on the prompt): held-out problems are code-word pairs
 * the training split never asks, under the same codes; every code has problems in both splits.
 */
import { randomInt } from '../math/random.js';
import { exact, similar, SORT_WORDS } from './skill.js';
import { splitDataset, type SkillTask } from './split.js';

/** The format each code names, code n at index n - 1 (the word goes where `*` is). */
export const NAMED_FORMATS: readonly string[] = Object.freeze(['[*]', '<*>', '{*}', '#*#', '*-*', '=*=']);

/** The problem "wrap <code>: <word>" and its answer. */
export function namedFormatProblem(code: number, word: string): { prompt: string; answer: string } {
  const format = NAMED_FORMATS[code - 1];
  return { prompt: `wrap ${code}: ${word}`, answer: format.replaceAll('*', word) };
}

/** "named-format": write a word in the format a code number names, a format the prompt never shows. */
export const namedFormat: SkillTask = {
  name: 'named-format',
  description: `Write a word in the format a code names ("wrap 4: owl" -> "#owl#"); ${NAMED_FORMATS.length} codes, each with a fixed format the prompt never shows.`,
  heldOut:
    'Held out: code-word pairs (problems whose prompt hashes to 0 modulo 5) that no training problem asks. Not held out: the codes and their formats; every code has training problems, so a library learnt on the training split knows each format, and the held-out problems test it on new words.',
  dataset: (options) =>
    splitDataset('named-format', (random) => namedFormatProblem(1 + randomInt(random, NAMED_FORMATS.length), SORT_WORDS[randomInt(random, SORT_WORDS.length)]), options),
  rewards: [exact, similar],
};

