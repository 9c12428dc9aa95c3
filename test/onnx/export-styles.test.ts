/**
 * The export styles users meet, each written by the project's builder and each loaded by
 * transformers.js too (the proof that it is a genuine export): for every one, generation
 * log-probs equal a transformers.js forward pass, scoreCompletions equals generation, greedy
 * equals transformers.js greedy, long prompts work, batched groups equal groups sampled alone,
 * and the hidden-state rewrite (gradient path) finds the head.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { buildModel, TINY, type ModelSpec } from '../../scripts/build-model/index.js';
import { expectLogprobsMatch, loadReference, referenceGreedy } from './export-checks.js';

const BASE: ModelSpec = { ...TINY, seed: 11, numLayers: 2, maxPositionEmbeddings: 4096 };

const STYLES: Array<[string, Partial<ModelSpec>, { passMode: string; tolerance: number; batchMode?: string }]> = [
  [
    "onnxruntime-genai's graph: GroupQueryAttention (rotary inside, seqlens_k from the mask), SkipSimplifiedLayerNormalization",
    { graph: 'genai' },
    // Its attention takes several new tokens on a cache for one row only, and reads seqlens_k as
    // right padding: scoring runs from an empty cache, and only equal lengths share a batch.
    { passMode: 'two-pass', tolerance: 1e-4, batchMode: 'equal-length' },
  ],
  ['no position_ids input (positions from the attention mask)', { positionIdsInput: false }, { passMode: 'incremental', tolerance: 1e-4 }],
  ['float16 cache and logits', { halfCache: true }, { passMode: 'incremental', tolerance: 1e-3 }],
  ['4-bit MatMulNBits weights (q4)', { weights: 'q4' }, { passMode: 'incremental', tolerance: 1e-4 }],
  ['an untied head with num_logits_to_keep', { tieWordEmbeddings: false, logitsToKeepInput: true }, { passMode: 'incremental', tolerance: 1e-4 }],
  [
    "onnxruntime-genai's mask from input_ids, no position_ids, float16 cache",
    { causalMask: 'input-ids', positionIdsInput: false, halfCache: true },
    { passMode: 'two-pass', tolerance: 1e-3 },
  ],
];

let root = '';
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'webgrpo-styles-'));
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe.each(STYLES)('%s', (name, style, expected) => {
  let dir = '';
  let policy: OnnxPolicy;
  beforeAll(async () => {
    dir = join(root, name.replace(/\W+/g, '-'));
    await buildModel({ ...BASE, ...style }, dir);
    policy = await loadOnnxPolicy({ model: dir });
  });
  afterAll(() => policy?.dispose());

  it('loads in transformers.js and in webgrpo, which reports how it drives it', async () => {
    expect(policy.info).toMatchObject({ backend: 'cpu', passMode: expected.passMode, batchMode: expected.batchMode ?? 'padded' });
  });

  it('samples log-probs that equal a transformers.js forward pass and scoreCompletions; greedy equals transformers.js greedy', async () => {
    const reference = await loadReference(dir);
    try {
      for (const [prompt, temperature] of [['The quick brown fox', 1], ['At another temperature', 0.7]] as const) {
        const group = await policy.generateGroup({ prompt, groupSize: 3, maxNewTokens: 10, seed: 5, temperature });
        await expectLogprobsMatch(policy, reference, prompt, group, temperature, expected.tolerance);
      }
      const greedy = await policy.generateGroup({ prompt: 'Hello', groupSize: 2, maxNewTokens: 12, temperature: 0 });
      const tokens = await referenceGreedy(reference, greedy.promptTokenIds, 12);
      for (const c of greedy.completions) expect(c.tokenIds).toEqual(tokens);
    } finally {
      await reference.dispose();
    }
  });

  it('takes long prompts, and batches groups of different prompt lengths as when sampled alone', async () => {
    const long = { prompt: 'a long prompt, '.repeat(60), groupSize: 2, maxNewTokens: 12, seed: 3 };
    const short = { prompt: 'short', groupSize: 3, maxNewTokens: 16, seed: 4 };
    const alone = [await policy.generateGroup(long), await policy.generateGroup(short)];
    const scored = await policy.scoreCompletions({ prompt: long.prompt, completions: alone[0].completions.map((c) => c.tokenIds) });
    alone[0].completions.forEach((c, i) => c.logprobs.forEach((lp, t) => expect(Math.abs(lp - scored.logprobs[i][t])).toBeLessThan(expected.tolerance)));
    const batched = await policy.generateGroups([long, short]);
    batched.forEach((g, i) => {
      expect(g.completions.map((c) => c.tokenIds)).toEqual(alone[i].completions.map((c) => c.tokenIds));
      g.completions.forEach((c, r) => c.logprobs.forEach((lp, t) => expect(Math.abs(lp - alone[i].completions[r].logprobs[t])).toBeLessThan(expected.tolerance)));
    });
  });

  it('gives the gradient path the hidden state: the rewrite finds the head', async () => {
    const withHidden = await loadOnnxPolicy({ model: dir, hiddenState: true });
    try {
      let picks = 0;
      await withHidden.head!.collect({ prompt: 'Hidden', completions: [[40, 41, 42]] }, async (window) => {
        expect(window.hidden!.dims.at(-1)).toBe(BASE.hiddenSize);
        picks += window.picks.length;
      });
      expect(picks).toBe(3);
    } finally {
      await withHidden.dispose();
    }
  });
});
