/**
 * Pretraining's batch gradient on the graph engine (one forward and backward for the whole batch,
 * examples padded into rows) equals the per-example gradients of the float64 graphs summed (to
 * float32 summation), on one thread and on two; the corpus is seeded and draws only training
 * problems, with the stated share of near-miss replies.
 */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { FullTrainingEngine } from '../../lib/train/full-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { splitOf } from '../../lib/tasks/split.js';
import { buildCorpus, chatPromptIds, encodeText, wrongAnswer } from '../../scripts/pretrain/corpus.js';
import { pretrainEngine, supervisedLoss } from '../../scripts/pretrain/train.js';
import { mulberry32 } from '../../lib/math/random.js';
import { vocabulary } from '../../scripts/build-model/tokenizer.js';
import { randomDecoder } from '../lora/random-decoder.js';

describe('pretraining', () => {
  it('computes the sum of the per-example gradients, on 1 and 2 threads', async () => {
    const vocabSize = vocabulary(0).length;
    const weights = randomDecoder({ shape: { vocabSize, hiddenSize: 16, intermediateSize: 24, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 4, ropeTheta: 10000, rmsNormEps: 1e-5 }, tied: true, seed: 3 });
    const batch = buildCorpus(7, 5, 0.3);
    const single = await FullTrainingEngine.create(ort as unknown as GraphRuntime, weights, { precision: 'float64' });
    let want: Float64Array[] | undefined;
    for (const e of batch) {
      const n = e.replyIds.length;
      await single.forward([{ prompt: e.promptIds, completions: [e.replyIds] }], { temperature: 1, reference: false });
      await single.backward(Float64Array.from(e.replyIds, () => -1 / (n * batch.length)), new Float64Array(n));
      const grad = single.gradient()!;
      want ??= grad.map((t) => new Float64Array(t.length));
      grad.forEach((t, k) => t.forEach((v, i) => (want![k][i] += v)));
    }
    single.dispose();
    for (const threads of [1, 2]) {
      const engine = await pretrainEngine(weights, threads);
      const stats = await engine.forward(batch.map((e) => ({ prompt: e.promptIds, completions: [e.replyIds] })), { temperature: 1, reference: false });
      const { loss, dLogp } = supervisedLoss(batch, stats.logps);
      expect(loss).toBeGreaterThan(0);
      await engine.backward(dLogp, new Float64Array(dLogp.length));
      const grad = engine.gradient()!;
      engine.dispose();
      grad.forEach((t, k) => {
        for (let i = 0; i < t.length; i++) expect(Math.abs(t[i] - want![k][i])).toBeLessThanOrEqual(1e-6 + 1e-5 * Math.abs(want![k][i]));
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
