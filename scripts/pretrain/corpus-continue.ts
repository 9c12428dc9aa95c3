/**
 * The second phase's corpus (config.ts, CONTINUE): the skill tasks' training split in the shares
 * of `taskShares`, half near misses, count-letter rebalanced, and a share of prompts carrying
 * worked examples of the same task rendered exactly as a Training-Free run renders its exemplars
 * (lib/experience/render.ts: the exemplars template, `[E3] Task: ...\nAnswer: ...`), so that a
 * model which has learnt from such prompts can be measured using them.
 */
import type { ExemplarEntry, ExperienceLibrary } from '../../lib/experience/types.js';
import { promptWithLibrary } from '../../lib/experience/render.js';
import { mulberry32, randomInt, shuffleInPlace, type Rng } from '../../lib/math/random.js';
import type { DatasetItem } from '../../lib/core/dataset.js';
import { skillTasks } from '../../lib/tasks/skill.js';
import type { SkillTask } from '../../lib/tasks/split.js';
import { IM_END_ID } from '../build-model/tokenizer.js';
import type { ContinueConfig } from './config.js';
import { chatPromptIds, encodeText, wrongAnswer, type Example } from './corpus.js';

const contentOf = (item: DatasetItem) => item.messages![0].content as string;
/** A copy-format prompt's format (`format [*]: owl` -> `[*]`). */
const formatOf = (prompt: string) => prompt.slice('format '.length, prompt.lastIndexOf(': '));

/** Keeps answer-1 count-letter problems at about `oneShare` of the result (drawn in order, deterministic). */
function rebalanceOnes(items: DatasetItem[], oneShare: number, random: Rng): DatasetItem[] {
  const ones = items.filter((item) => item.answer === '1');
  const others = items.filter((item) => item.answer !== '1');
  const keepOnes = Math.round((others.length * oneShare) / (1 - oneShare));
  const kept = [...others, ...ones.slice(0, keepOnes)];
  shuffleInPlace(random, kept);
  return kept;
}

/**
 * The prompt of `item` with 1 to `max` worked examples of the same task from `pool` (never the
 * item itself). Ids are distinct and drawn from a run's range, so no position or id gives the
 * answer away. For copy-format, half the time one example shares the item's format, as a library
 * built on the task often holds one.
 */
function withExemplars(task: SkillTask, item: DatasetItem, pool: DatasetItem[], max: number, random: Rng): string {
  const content = contentOf(item);
  const count = 1 + randomInt(random, max);
  const chosen: DatasetItem[] = [];
  if (task.name === 'copy-format' && randomInt(random, 2) === 0) {
    const sameFormat = pool.filter((p) => contentOf(p) !== content && formatOf(contentOf(p)) === formatOf(content));
    if (sameFormat.length) chosen.push(sameFormat[randomInt(random, sameFormat.length)]);
  }
  while (chosen.length < count) {
    const candidate = pool[randomInt(random, pool.length)];
    if (contentOf(candidate) !== content && !chosen.includes(candidate)) chosen.push(candidate);
  }
  shuffleInPlace(random, chosen);
  const ids = new Set<number>();
  while (ids.size < chosen.length) ids.add(randomInt(random, 24));
  const exemplars: ExemplarEntry[] = chosen.map((p, i) => ({ id: `E${[...ids][i]}`, item: contentOf(p), output: p.answer as string, score: 1, createdStep: 0, updatedStep: 0 }));
  const library: ExperienceLibrary = { nextId: 24, entries: [], exemplars };
  const { prompt } = promptWithLibrary({ messages: [{ role: 'user', content }] }, library);
  return prompt.messages![0].content;
}

export function buildContinuationCorpus(config: ContinueConfig): Example[] {
  const random = mulberry32(config.seed);
  const count = config.steps * config.batch;
  const examples: Example[] = [];
  skillTasks.forEach((task, t) => {
    const size = Math.ceil(count * config.taskShares[t]);
    // Count-letter draws enough problems to drop most answer-1 ones and still have `size`.
    const drawn = task.dataset({ size: task.name === 'count-letter' ? size * 3 : size, seed: config.seed * 10 + t, split: 'train' });
    const items = task.name === 'count-letter' ? rebalanceOnes(drawn, config.countLetterOneShare, random).slice(0, size) : drawn;
    const pool = task.dataset({ size: 512, seed: config.seed * 10 + t + 5, split: 'train' });
    for (const item of items) {
      const answer = item.answer as string;
      const exemplified = random() < config.exemplarShare;
      const correct = random() >= (exemplified ? config.exemplarWrongShare : config.wrongShare);
      const reply = correct ? answer : wrongAnswer(task.name, answer, random);
      const content = exemplified ? withExemplars(task, item, pool, config.maxExemplars, random) : contentOf(item);
      examples.push({ task: task.name, promptIds: chatPromptIds(content), replyIds: [...encodeText(reply), IM_END_ID], correct });
    }
  });
  shuffleInPlace(random, examples);
  return examples.slice(0, count);
}
