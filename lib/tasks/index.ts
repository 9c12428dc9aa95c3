import { InvalidInputError } from '../errors.js';
import { alphabetise } from './alphabetise.js';
import { arithmetic } from './arithmetic.js';
import { digits, shout } from './characters.js';
import { firstLetter } from './first-letter.js';
import { jsonFormat } from './json-format.js';
import { keywords } from './keywords.js';
import { namedFormat } from './named-format.js';
import { addSubtract, copyFormat, countLetter, sortWords } from './skill.js';
import type { Task } from './types.js';

export type { Task, DatasetOptions } from './types.js';
export { alphabetise } from './alphabetise.js';
export { arithmetic } from './arithmetic.js';
export { characterShare, digits, shout } from './characters.js';
export { firstLetter } from './first-letter.js';
export { jsonFormat } from './json-format.js';
export { keywords } from './keywords.js';
export { namedFormat } from './named-format.js';
export { builtinRewards } from './rewards.js';
export { addSubtract, copyFormat, countLetter, skillTasks, sortWords } from './skill.js';
export { splitOf, type SkillDatasetOptions, type SkillTask, type Split } from './split.js';

/** The built-in tasks by name. */
export const builtinTasks: Readonly<Record<string, Task>> = Object.freeze({
  [alphabetise.name]: alphabetise,
  [arithmetic.name]: arithmetic,
  [jsonFormat.name]: jsonFormat,
  [keywords.name]: keywords,
  [digits.name]: digits,
  [shout.name]: shout,
  [firstLetter.name]: firstLetter,
  [addSubtract.name]: addSubtract,
  [sortWords.name]: sortWords,
  [countLetter.name]: countLetter,
  [copyFormat.name]: copyFormat,
  [namedFormat.name]: namedFormat,
});

/** The built-in task of that name; an `InvalidInputError` naming the choices for any other. */
export function getTask(name: string): Task {
  const task = builtinTasks[name];
  if (!task) throw new InvalidInputError('task', `unknown task "${name}"; choose one of ${Object.keys(builtinTasks).join(', ')}.`);
  return task;
}
export { parseDatasetJsonl } from './jsonl.js';
