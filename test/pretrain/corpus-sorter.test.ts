/**
 * The sorter model's corpus: seeded, only the training split, its sort-words replies right or the
 * configured near misses in their shares, the other skill tasks in theirs; and the profile's reply
 * kinds name each near miss.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../lib/math/random.js';
import { splitOf } from '../../lib/tasks/split.js';
import { vocabulary } from '../../scripts/build-model/tokenizer.js';
import { SORTER, type SorterConfig } from '../../scripts/pretrain/config.js';
import { buildSorterCorpus, sorterReply } from '../../scripts/pretrain/corpus-sorter.js';
import { replyKind } from '../../scripts/pretrain/sorter-profile.js';

const vocab = vocabulary(0);
const text = (ids: number[]) => ids.map((id) => vocab[id]).join('');
const config: SorterConfig = { ...SORTER, steps: 50, batch: 40, otherShare: 0.25 };

describe('the sorter corpus', () => {
  const corpus = buildSorterCorpus(config);

  it('is seeded, of training problems only, with the near misses in their shares', () => {
    expect(buildSorterCorpus(config)).toEqual(corpus);
    expect(corpus).toHaveLength(config.steps * config.batch);
    const kinds = { right: 0, copy: 0, twice: 0, swap: 0, other: 0 };
    const sorts = corpus.filter((e) => e.task === 'sort-words');
    expect(sorts.length / corpus.length).toBeCloseTo(1 - config.otherShare, 2);
    expect(new Set(corpus.map((e) => e.task)).size).toBe(4);
    for (const e of corpus) {
      const prompt = text(e.promptIds).slice('<s><|im_start|>user\n'.length, -'<|im_end|>\n<|im_start|>assistant\n'.length);
      expect(splitOf(prompt)).toBe('train');
      if (e.task !== 'sort-words') continue;
      const words = prompt.slice('sort: '.length).split(' ');
      const reply = text(e.replyIds).replace('<|im_end|>', '');
      expect(e.correct).toBe(reply === [...words].sort().join(' '));
      kinds[replyKind(reply, words)] += 1 / sorts.length;
    }
    // A copied order that is already sorted counts as right.
    const sortedShare = 1 / 6 / 2 + 1 / 24 / 2;
    expect(kinds.copy).toBeCloseTo(config.copyShare * (1 - sortedShare), 1);
    expect(kinds.twice).toBeCloseTo(config.twiceShare, 1);
    expect(kinds.swap).toBeCloseTo(config.swapShare, 1);
    expect(kinds.other).toBe(0);
    expect(kinds.right).toBeCloseTo(1 - config.copyShare * (1 - sortedShare) - config.twiceShare - config.swapShare, 1);
  });

  it('names each kind of reply', () => {
    const words = ['owl', 'cat', 'fig', 'ant'];
    const random = mulberry32(3);
    expect(replyKind(sorterReply('right', words, random), words)).toBe('right');
    expect(replyKind(sorterReply('copy', words, random), words)).toBe('copy');
    for (let i = 0; i < 10; i++) {
      expect(replyKind(sorterReply('twice', words, random), words)).toBe('twice');
      expect(replyKind(sorterReply('swap', words, random), words)).toBe('swap');
    }
    expect(replyKind('ant cat cat owl', words)).toBe('twice');
    expect(replyKind('ant fig cat owl', words)).toBe('swap');
    expect(replyKind('ant cat fig', words)).toBe('other');
    expect(replyKind('ant ant ant owl', words)).toBe('other');
  });
});
