/**
 * The pretraining corpus: problems of the skill tasks' training split, in chat form through the
 * character tokenizer's ChatML template, each with its reply and <|im_end|>. A share of replies are
 * near misses (an answer off by one, two words swapped, a wrong bracket), so the model learns the
 * right answer as likeliest but not certain.
 */
import { mulberry32, randomInt, shuffleInPlace, type Rng } from '../../lib/math/random.js';
import { skillTasks } from '../../lib/tasks/skill.js';
import { BOS_ID, IM_END_ID, SPECIAL_TOKENS, vocabulary } from '../build-model/tokenizer.js';

const IM_START_ID = SPECIAL_TOKENS.indexOf('<|im_start|>');
const VOCAB = vocabulary(0);
const ID = new Map(VOCAB.map((token, id) => [token, id]));

/** Character ids of plain text (every character must be in the vocabulary). */
export function encodeText(text: string): number[] {
  return [...text].map((c) => {
    const id = ID.get(c);
    if (id === undefined) throw new RangeError(`character ${JSON.stringify(c)} is not in the vocabulary`);
    return id;
  });
}

/** The chat template's prompt for one user message, with the generation prompt (tokenizer.ts CHAT_TEMPLATE). */
export function chatPromptIds(content: string): number[] {
  return [BOS_ID, IM_START_ID, ...encodeText(`user\n${content}`), IM_END_ID, ...encodeText('\n'), IM_START_ID, ...encodeText('assistant\n')];
}

export interface Example {
  task: string;
  promptIds: number[];
  /** The reply's ids and <|im_end|>. */
  replyIds: number[];
  correct: boolean;
}

/** A near miss of `answer` for the task, never equal to it. */
export function wrongAnswer(task: string, answer: string, random: Rng): string {
  let wrong = answer;
  while (wrong === answer) {
    if (task === 'add-subtract' || task === 'count-letter') {
      const deltas = task === 'count-letter' ? [-1, 1, 1, 2] : [-10, -1, 1, 10, -2, 2];
      wrong = String(Math.max(0, Number(answer) + deltas[randomInt(random, deltas.length)]));
    } else if (task === 'sort-words') {
      const words = answer.split(' ');
      const i = randomInt(random, words.length - 1);
      [words[i], words[i + 1]] = [words[i + 1], words[i]];
      wrong = words.join(' ');
    } else {
      // copy-format: one character of the format changed or dropped.
      const chars = [...answer];
      const at = randomInt(random, 2) === 0 ? 0 : chars.length - 1;
      const marks = '[](){}<>!#-_=:?+/.~"';
      if (randomInt(random, 3) === 0) chars.splice(at, 1);
      else chars[at] = marks[randomInt(random, marks.length)];
      wrong = chars.join('');
    }
  }
  return wrong;
}

/** `count` examples, tasks in equal shares, shuffled; the same seed gives the same corpus. */
export function buildCorpus(count: number, seed: number, wrongShare: number): Example[] {
  const random = mulberry32(seed);
  const perTask = Math.ceil(count / skillTasks.length);
  const examples: Example[] = [];
  skillTasks.forEach((task, t) => {
    for (const item of task.dataset({ size: perTask, seed: seed * 10 + t, split: 'train' })) {
      const answer = item.answer as string;
      const correct = random() >= wrongShare;
      const reply = correct ? answer : wrongAnswer(task.name, answer, random);
      examples.push({ task: task.name, promptIds: chatPromptIds(item.messages![0].content as string), replyIds: [...encodeText(reply), IM_END_ID], correct });
    }
  });
  shuffleInPlace(random, examples);
  return examples.slice(0, count);
}
