/**
 * The data-parallel gradient of pretraining equals the one-thread gradient of the same batch (to
 * float32 summation), whatever the worker count; the corpus is seeded and draws only training
 * problems, with the stated share of near-miss replies.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { decoderGroupForward, decoderTensors, zerosLikeDecoder } from '../../lib/lora/full-grad.js';
import { splitOf } from '../../lib/tasks/split.js';
import { buildCorpus, chatPromptIds, encodeText, wrongAnswer } from '../../scripts/pretrain/corpus.js';
import { GradientPool, shareWeights } from '../../scripts/pretrain/parallel.js';
import { mulberry32 } from '../../lib/math/random.js';
import { vocabulary } from '../../scripts/build-model/tokenizer.js';
import { randomDecoder } from '../lora/random-decoder.js';

const pools: GradientPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

describe('pretraining', () => {
  it('computes the same batch gradient on 1 and 3 workers as on the main thread', async () => {
    const vocabSize = vocabulary(0).length;
    const weights = shareWeights(randomDecoder({ shape: { vocabSize, hiddenSize: 16, intermediateSize: 24, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 4, ropeTheta: 10000, rmsNormEps: 1e-5 }, tied: true, seed: 3 }));
    const batch = buildCorpus(7, 5, 0.3);
    const expected = zerosLikeDecoder(weights);
    for (const e of batch) {
      const n = e.replyIds.length;
      decoderGroupForward(weights, { promptIds: e.promptIds, completions: [e.replyIds] }).backward([e.replyIds.map(() => -1 / (n * batch.length))], expected);
    }
    const want = decoderTensors(expected);
    for (const count of [1, 3]) {
      const pool = new GradientPool(weights, count);
      pools.push(pool);
      const { grad, loss, rows } = await pool.gradient(batch);
      expect(rows).toBe(batch.reduce((s, e) => s + e.promptIds.length + e.replyIds.length, 0));
      expect(loss).toBeGreaterThan(0);
      decoderTensors(grad).forEach((t, k) => {
        for (let i = 0; i < t.length; i++) expect(Math.abs(t[i] - want[k][i])).toBeLessThanOrEqual(1e-6 + 1e-5 * Math.abs(want[k][i]));
      });
    }
  });

  it('builds a seeded corpus of training problems in chat form with near-miss replies', () => {
    const corpus = buildCorpus(400, 9, 0.3);
    expect(buildCorpus(400, 9, 0.3)).toEqual(corpus);
    const vocab = vocabulary(0);
    for (const e of corpus) {
      const text = e.promptIds.map((id) => vocab[id]).join('');
      expect(text.startsWith('<s><|im_start|>user\n')).toBe(true);
      expect(text.endsWith('<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
      const prompt = text.slice('<s><|im_start|>user\n'.length, -'<|im_end|>\n<|im_start|>assistant\n'.length);
      expect(splitOf(prompt)).toBe('train');
      expect(e.promptIds).toEqual(chatPromptIds(prompt));
      expect(vocab[e.replyIds.at(-1)!]).toBe('<|im_end|>');
    }
    const wrong = corpus.filter((e) => !e.correct).length / corpus.length;
    expect(wrong).toBeGreaterThan(0.22);
    expect(wrong).toBeLessThan(0.38);
    expect(new Set(corpus.map((e) => e.task)).size).toBe(4);
    const random = mulberry32(1);
    for (const [task, answer] of [['add-subtract', '0'], ['count-letter', '1'], ['sort-words', 'ant cat fig'], ['copy-format', '[owl]']]) {
      for (let i = 0; i < 20; i++) expect(wrongAnswer(task, answer, random)).not.toBe(answer);
    }
    expect(() => encodeText('é')).toThrow(RangeError);
  });
});
