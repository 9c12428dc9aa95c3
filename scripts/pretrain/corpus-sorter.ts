/**
 * The sorter model's corpus (sorter.ts): sort-words problems of the training split only, each
 * reply right or one of three near misses in set shares: the words in the order the prompt gives
 * them (the input copied), a word written twice in place of the next one (the skill model's own
 * typical mistake, "map map nut"), or two adjacent words swapped. The copied order is one
 * consistent wrong program, so where its share is near the right replies' the model's likeliest
 * reply is often the copy while the sorted one stays well inside its samples: the model GRPO
 * starts from is right greedily on few problems and in some sample of eight on most. A share of
 * the chats are the other skill tasks, as the skill model's first corpus draws them, so that the
 * model still answers them.
 */
import { mulberry32, randomInt, shuffleInPlace, type Rng } from '../../lib/math/random.js';
import { skillTasks, sortWords } from '../../lib/tasks/skill.js';
import { IM_END_ID } from '../build-model/tokenizer.js';
import type { SorterConfig } from './config.js';
import { buildCorpus, chatPromptIds, encodeText, type Example } from './corpus.js';

export type SorterReply = 'right' | 'copy' | 'twice' | 'swap';

/** A reply of `kind` to a problem whose words, in the prompt's order, are `words`. */
export function sorterReply(kind: SorterReply, words: readonly string[], random: Rng): string {
  const sorted = [...words].sort();
  if (kind === 'right') return sorted.join(' ');
  if (kind === 'copy') return words.join(' ');
  const k = randomInt(random, sorted.length - 1);
  if (kind === 'twice') sorted[k + 1] = sorted[k];
  else [sorted[k], sorted[k + 1]] = [sorted[k + 1], sorted[k]];
  return sorted.join(' ');
}

export function buildSorterCorpus(config: SorterConfig): Example[] {
  const random = mulberry32(config.seed);
  const total = config.steps * config.batch;
  const others = Math.round(total * config.otherShare);
  const count = total - others;
  const shares: Array<[SorterReply, number]> = [['copy', config.copyShare], ['twice', config.twiceShare], ['swap', config.swapShare]];
  const sorts = sortWords.dataset({ size: count, seed: config.seed * 10 + 1, split: 'train' }).map((item): Example => {
    const content = item.messages![0].content as string;
    const words = content.slice('sort: '.length).split(' ');
    let u = random();
    let kind: SorterReply = 'right';
    for (const [k, share] of shares) {
      if (u < share) {
        kind = k;
        break;
      }
      u -= share;
    }
    const reply = sorterReply(kind, words, random);
    return { task: sortWords.name, promptIds: chatPromptIds(content), replyIds: [...encodeText(reply), IM_END_ID], correct: reply === item.answer };
  });
  // The other skill tasks as the skill model's first corpus has them (corpus.ts), so the model keeps them.
  const rest = others > 0 ? buildCorpus(Math.ceil((others * skillTasks.length) / (skillTasks.length - 1)) + skillTasks.length, config.seed + 1, config.otherWrongShare).filter((e) => e.task !== sortWords.name).slice(0, others) : [];
  const corpus = [...sorts, ...rest];
  shuffleInPlace(random, corpus);
  return corpus;
}
