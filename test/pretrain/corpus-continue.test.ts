/**
 * The second pretraining phase's corpus: seeded, only training problems (the worked examples in
 * a prompt too), the configured task shares and near-miss shares, count-letter's answer-1
 * problems rebalanced, and exemplar prompts in exactly the form a Training-Free run renders.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_EXEMPLARS_TEMPLATE } from '../../lib/experience/render.js';
import { skillTasks } from '../../lib/tasks/skill.js';
import { splitOf } from '../../lib/tasks/split.js';
import { vocabulary } from '../../scripts/build-model/tokenizer.js';
import { CONTINUE, type ContinueConfig } from '../../scripts/pretrain/config.js';
import { buildContinuationCorpus } from '../../scripts/pretrain/corpus-continue.js';

const config: ContinueConfig = { ...CONTINUE, steps: 60, batch: 32 };
const vocab = vocabulary(0);
const text = (ids: number[]) => ids.map((id) => vocab[id]).join('');
const userOf = (ids: number[]) => text(ids).slice('<s><|im_start|>user\n'.length, -'<|im_end|>\n<|im_start|>assistant\n'.length);
const [preamble, rest] = DEFAULT_EXEMPLARS_TEMPLATE.split('{{experiences}}');
const suffix = rest.replace('{{prompt}}', '');

describe('the continuation corpus', () => {
  const corpus = buildContinuationCorpus(config);

  it('is seeded and has the configured size and task shares', () => {
    expect(buildContinuationCorpus(config)).toEqual(corpus);
    expect(buildContinuationCorpus({ ...config, seed: config.seed + 1 })).not.toEqual(corpus);
    expect(corpus).toHaveLength(config.steps * config.batch);
    skillTasks.forEach((task, t) => {
      const share = corpus.filter((e) => e.task === task.name).length / corpus.length;
      expect(Math.abs(share - config.taskShares[t]), task.name).toBeLessThan(0.02);
    });
  });

  it('holds only training problems, worked examples included, in the exemplars template', () => {
    let exemplified = 0;
    for (const e of corpus) {
      const user = userOf(e.promptIds);
      if (!user.startsWith(preamble.trimEnd())) {
        expect(splitOf(user)).toBe('train');
        continue;
      }
      exemplified++;
      expect(user.startsWith(preamble)).toBe(true);
      const body = user.slice(preamble.length);
      const cut = body.lastIndexOf(suffix);
      const problem = body.slice(cut + suffix.length);
      expect(splitOf(problem)).toBe('train');
      const blocks = body.slice(0, cut).split('\n\n');
      expect(blocks.length).toBeGreaterThanOrEqual(1);
      expect(blocks.length).toBeLessThanOrEqual(config.maxExemplars);
      for (const block of blocks) {
        const m = /^\[E(\d+)\] Task: (.+)\nAnswer: (.+)$/.exec(block);
        expect(m, block).not.toBeNull();
        expect(splitOf(m![2])).toBe('train');
        expect(m![2]).not.toBe(problem);
        const task = skillTasks.find((t) => t.name === e.task)!;
        // A worked example is right: its answer is the task's answer to its problem.
        expect(task.rewards[0].score({ text: m![3], item: { answer: answerOf(e.task, m![2]) } } as never)).toBe(1);
      }
    }
    expect(Math.abs(exemplified / corpus.length - config.exemplarShare)).toBeLessThan(0.03);
  });

  it('has the configured near-miss shares and fewer answer-1 count-letter problems', () => {
    const plain = corpus.filter((e) => !userOf(e.promptIds).startsWith(preamble));
    const exemplar = corpus.filter((e) => userOf(e.promptIds).startsWith(preamble));
    const wrong = (xs: typeof corpus) => xs.filter((e) => !e.correct).length / xs.length;
    expect(Math.abs(wrong(plain) - config.wrongShare)).toBeLessThan(0.04);
    expect(Math.abs(wrong(exemplar) - config.exemplarWrongShare)).toBeLessThan(0.04);
    const counts = corpus.filter((e) => e.task === 'count-letter');
    const ones = counts.filter((e) => /(^|\n)count [a-z]: \w+$/.test(userOf(e.promptIds)) && answerOf('count-letter', lastLine(userOf(e.promptIds))) === '1').length / counts.length;
    expect(Math.abs(ones - config.countLetterOneShare)).toBeLessThan(0.05);
  });
});

const lastLine = (s: string) => s.slice(s.lastIndexOf('\n') + 1);

/** The right answer of a skill problem, recomputed from its prompt. */
function answerOf(task: string, prompt: string): string {
  if (task === 'add-subtract') {
    const [, a, op, b] = /^(\d+)([+-])(\d+)=$/.exec(prompt)!;
    return String(op === '+' ? Number(a) + Number(b) : Number(a) - Number(b));
  }
  if (task === 'sort-words') return prompt.slice('sort: '.length).split(' ').sort().join(' ');
  if (task === 'count-letter') {
    const [, letter, word] = /^count (\w): (\w+)$/.exec(prompt)!;
    return String([...word].filter((c) => c === letter).length);
  }
  const [, format, word] = /^format (.+): (\w+)$/.exec(prompt)!;
  return format.replaceAll('*', word);
}
