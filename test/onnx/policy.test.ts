/**
 * loadOnnxPolicy in Node (onnxruntime-node, CPU) on the bundled model and on a differently shaped
 * one: log-probs that scoring reproduces, greedy decoding identical to transformers.js, seeded
 * groups, filters that filter, per-row stopping, abort, and typed errors for bad input.
 */
import { cp, rm, truncate, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { AutoModelForCausalLM, Tensor } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError, ModelLoadError } from '../../lib/errors.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import type { GenerateGroupOptions, GroupResult } from '../../lib/core/policy.js';
import { buildOtherModel, TINY_DIR } from './fixtures.js';

const EOS = [2, 5];

let tiny: OnnxPolicy;
let other: OnnxPolicy;
let otherDir = '';
beforeAll(async () => {
  otherDir = await buildOtherModel();
  [tiny, other] = await Promise.all([loadOnnxPolicy({ model: await bundledModelPath() }), loadOnnxPolicy({ model: otherDir })]);
});
afterAll(async () => {
  await Promise.all([tiny?.dispose(), other?.dispose()]);
  if (otherDir) await rm(dirname(otherDir), { recursive: true, force: true });
});

/** Every generated log-prob against scoreCompletions of the same tokens. */
async function expectScoresMatch(policy: OnnxPolicy, options: GenerateGroupOptions, group: GroupResult): Promise<number> {
  const scored = await policy.scoreCompletions({
    prompt: options.prompt,
    messages: options.messages,
    completions: group.completions.map((c) => c.tokenIds),
    temperature: options.temperature,
  });
  let checked = 0;
  group.completions.forEach((c, i) => {
    expect(scored.logprobs[i]).toHaveLength(c.tokenIds.length);
    c.logprobs.forEach((lp, t) => {
      expect(Math.abs(lp - scored.logprobs[i][t]), `row ${i} token ${t}`).toBeLessThan(1e-4);
      expect(scored.entropies[i][t]).toBeGreaterThan(0);
      checked++;
    });
  });
  return checked;
}

describe.each([
  ['the bundled model', () => tiny],
  ['a differently shaped model', () => other],
])('%s', (_, policyOf) => {
  it('reports where it runs', () => {
    expect(policyOf().info.backend).toBe('cpu');
  });

  it('returns log-probs that scoreCompletions reproduces to 1e-4 on every token', async () => {
    const policy = policyOf();
    const cases: GenerateGroupOptions[] = [
      { prompt: 'The quick brown fox', groupSize: 6, maxNewTokens: 24, seed: 3 },
      { messages: [{ role: 'user', content: 'Add 2 and 3.' }], groupSize: 5, maxNewTokens: 16, seed: 4, temperature: 0.7, topK: 20, topP: 0.9 },
      { prompt: 'x', groupSize: 3, maxNewTokens: 8, seed: 5, temperature: 1.5, minP: 0.05 },
    ];
    for (const options of cases) {
      const group = await policy.generateGroup(options);
      expect(group.completions).toHaveLength(options.groupSize);
      expect(await expectScoresMatch(policy, options, group)).toBe(group.usage.completionTokens);
      for (const c of group.completions) {
        c.sampledLogprobs!.forEach((s, t) => expect(s).toBeGreaterThanOrEqual(c.logprobs[t] - 1e-9));
      }
    }
  });

  it('gives the same group for the same seed, another for another seed', async () => {
    const policy = policyOf();
    const options = { prompt: 'Seeded', groupSize: 4, maxNewTokens: 12, topP: 0.95 };
    const a = await policy.generateGroup({ ...options, seed: 11 });
    const b = await policy.generateGroup({ ...options, seed: 11 });
    const c = await policy.generateGroup({ ...options, seed: 12 });
    expect(b).toEqual(a);
    expect(c.completions.map((x) => x.tokenIds)).not.toEqual(a.completions.map((x) => x.tokenIds));
    // Rows draw from their own streams: a row is the same in a larger group.
    const larger = await policy.generateGroup({ ...options, seed: 11, groupSize: 6 });
    expect(larger.completions[2].tokenIds).toEqual(a.completions[2].tokenIds);
  });

  it('prefills the prompt once and then runs one pass per step for the whole group', async () => {
    const policy = policyOf();
    const before = policy.stats().forwardPasses;
    const group = await policy.generateGroup({ prompt: 'A prompt of some length, prefilled once.', groupSize: 8, maxNewTokens: 10, seed: 1 });
    const longest = Math.max(...group.completions.map((c) => c.tokenIds.length));
    expect(policy.stats().forwardPasses - before).toBe(1 + (longest - 1));
  });

  it('decodes greedily exactly as transformers.js generate() does, token for token', async () => {
    const policy = policyOf();
    const reference = await AutoModelForCausalLM.from_pretrained(policy.info.model);
    const prompts: GenerateGroupOptions[] = [
      { prompt: 'Hello', groupSize: 2, maxNewTokens: 20, temperature: 0 },
      { prompt: '12 + 30 = ', groupSize: 1, maxNewTokens: 20, temperature: 0 },
      { messages: [{ role: 'user', content: 'Tell me a story.' }], groupSize: 3, maxNewTokens: 20, temperature: 0 },
    ];
    for (const options of prompts) {
      const group = await policy.generateGroup(options);
      const ids = group.promptTokenIds;
      const output = (await reference.generate({
        input_ids: new Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
        attention_mask: new Tensor('int64', new BigInt64Array(ids.length).fill(1n), [1, ids.length]),
        max_new_tokens: options.maxNewTokens,
        do_sample: false,
      })) as Tensor;
      const expected = (output.tolist()[0] as bigint[]).slice(ids.length).map(Number);
      for (const c of group.completions) {
        expect(c.tokenIds).toEqual(expected);
        expect(c.sampledLogprobs!.every((s) => s === 0)).toBe(true);
      }
    }
    await reference.dispose();
  });
});

describe('group sampling', () => {
  it('stops each row at its own end token and returns nothing after it', async () => {
    const group = await tiny.generateGroup({ prompt: 'Stop', groupSize: 24, maxNewTokens: 40, seed: 2 });
    const reasons = new Set(group.completions.map((c) => c.finishReason));
    expect(reasons).toEqual(new Set(['eos', 'length']));
    for (const c of group.completions) {
      const endAt = c.tokenIds.findIndex((id) => EOS.includes(id));
      if (c.finishReason === 'eos') {
        expect(endAt).toBe(c.tokenIds.length - 1);
        expect(c.text).toBe(await tiny.decode(c.tokenIds.slice(0, -1)));
      } else {
        expect(endAt).toBe(-1);
        expect(c.tokenIds).toHaveLength(40);
      }
      expect(c.logprobs).toHaveLength(c.tokenIds.length);
    }
  });

  it('stops at stop strings, also ones spanning tokens, and cuts the text before them', async () => {
    // Greedy decoding of this prompt repeats one character, so "99" needs two tokens.
    const greedy = await tiny.generateGroup({ prompt: 'Hello', groupSize: 1, maxNewTokens: 6, temperature: 0 });
    const char = greedy.completions[0].text[0];
    const spanning = await tiny.generateGroup({ prompt: 'Hello', groupSize: 2, maxNewTokens: 6, temperature: 0, stop: [char + char] });
    for (const c of spanning.completions) {
      expect(c).toMatchObject({ finishReason: 'stop', text: '' });
      expect(c.tokenIds).toHaveLength(2);
    }

    const stop = ['e', 'a', 'o'];
    const group = await tiny.generateGroup({ prompt: 'Some text', groupSize: 16, maxNewTokens: 30, seed: 8, stop });
    expect(group.completions.some((c) => c.finishReason === 'stop')).toBe(true);
    for (const c of group.completions) {
      for (const s of stop) expect(c.text).not.toContain(s);
      if (c.finishReason !== 'stop') continue;
      const full = await tiny.decode(c.tokenIds);
      expect(full.startsWith(c.text)).toBe(true);
      expect(stop).toContain(full[c.text.length]);
      expect(full.length).toBe(c.text.length + 1); // the token that completed the stop string is the last one
    }
  });

  it('top-k, top-p and min-p really filter: sampled tokens lie in the kept set of the true distribution', async () => {
    const prompt = 'Filters';
    /** log p of every vocabulary token after `prefix`, by scoring each one-token extension. */
    const distribution = async (prefix: number[]) => {
      const all = Array.from({ length: 102 }, (_, v) => [...prefix, v]);
      const scored = await tiny.scoreCompletions({ prompt, completions: all });
      return scored.logprobs.map((lp) => lp[prefix.length]);
    };
    const cases = [
      { topK: 5, kept: (lps: number[], lp: number) => lps.filter((x) => x > lp).length < 5 },
      { topP: 0.5, kept: (lps: number[], lp: number) => lps.filter((x) => x > lp).reduce((s, x) => s + Math.exp(x), 0) < 0.5 },
      { minP: 0.3, kept: (lps: number[], lp: number) => lp >= Math.log(0.3) + Math.max(...lps) },
    ];
    for (const { kept, ...filter } of cases) {
      const group = await tiny.generateGroup({ prompt, groupSize: 4, maxNewTokens: 3, seed: 21, ...filter });
      for (const c of group.completions) {
        for (let t = 0; t < c.tokenIds.length; t++) {
          const lps = await distribution(c.tokenIds.slice(0, t));
          expect(kept(lps, lps[c.tokenIds[t]]), JSON.stringify(filter)).toBe(true);
          // The processed log-prob is the same token renormalized over the kept set.
          const keptMass = lps.filter((lp) => kept(lps, lp)).reduce((s, lp) => s + Math.exp(lp), 0);
          expect(c.sampledLogprobs![t]).toBeCloseTo(lps[c.tokenIds[t]] - Math.log(keptMass), 4);
        }
      }
    }
    // At their extremes each filter leaves only the most likely token: greedy decoding.
    const greedy = await tiny.generateGroup({ prompt, groupSize: 2, maxNewTokens: 8, temperature: 0 });
    for (const filter of [{ topK: 1 }, { topP: 1e-6 }, { minP: 0.9999 }]) {
      const group = await tiny.generateGroup({ prompt, groupSize: 2, maxNewTokens: 8, seed: 5, ...filter });
      expect(group.completions.map((c) => c.tokenIds)).toEqual(greedy.completions.map((c) => c.tokenIds));
    }
  });

  it('aborts within one decode step with finishReason "abort"', async () => {
    const controller = new AbortController();
    let tokens = 0;
    let passesAtAbort = 0;
    const group = await tiny.generateGroup({
      prompt: 'Abort me',
      groupSize: 4,
      maxNewTokens: 50,
      seed: 6,
      signal: controller.signal,
      onToken: () => {
        if (++tokens === 10) {
          passesAtAbort = tiny.stats().forwardPasses;
          controller.abort();
        }
      },
    });
    expect(tiny.stats().forwardPasses - passesAtAbort).toBeLessThanOrEqual(1);
    expect(group.completions.some((c) => c.finishReason === 'abort')).toBe(true);
    for (const c of group.completions) expect(c.tokenIds.length).toBeLessThanOrEqual(3);

    const already = new AbortController();
    already.abort();
    const none = await tiny.generateGroup({ prompt: 'Abort me', groupSize: 2, maxNewTokens: 5, signal: already.signal });
    expect(none.completions).toEqual([0, 1].map(() => expect.objectContaining({ tokenIds: [], text: '', finishReason: 'abort' })));
  });

  it('encodes and decodes text', async () => {
    const ids = await tiny.encode('abc 123');
    expect(ids).toHaveLength(7);
    expect(await tiny.decode(ids)).toBe('abc 123');
  });

  it('keeps special tokens when asked, so a rendered chat prompt decodes to text that encodes back to it', async () => {
    const { promptTokenIds } = await tiny.generateGroup({ messages: [{ role: 'user', content: 'hi' }], groupSize: 1, maxNewTokens: 1 });
    const rendered = await tiny.decode(promptTokenIds, { skipSpecialTokens: false });
    expect(rendered.length).toBeGreaterThan((await tiny.decode(promptTokenIds)).length);
    expect(await tiny.encode(rendered)).toEqual(promptTokenIds);
  });
});

describe('bad input', () => {
  const base = { prompt: 'ok', groupSize: 2, maxNewTokens: 4 };
  it.each([
    [{ ...base, prompt: '' }, 'prompt'],
    [{ ...base, messages: [{ role: 'user' as const, content: 'x' }] }, 'prompt'],
    [{ groupSize: 2, maxNewTokens: 4, messages: [] }, 'messages'],
    [{ groupSize: 2, maxNewTokens: 4 }, 'prompt'],
    [{ ...base, groupSize: 0 }, 'groupSize'],
    [{ ...base, groupSize: 65 }, 'groupSize'],
    [{ ...base, groupSize: 2.5 }, 'groupSize'],
    [{ ...base, maxNewTokens: 0 }, 'maxNewTokens'],
    [{ ...base, maxNewTokens: -3 }, 'maxNewTokens'],
    [{ ...base, maxNewTokens: 5000 }, 'maxNewTokens'],
    [{ ...base, stop: [''] }, 'stop'],
    [{ ...base, temperature: -1 }, 'temperature'],
  ])('generateGroup(%o) throws InvalidInputError for %s', async (options, argument) => {
    const error = await tiny.generateGroup(options as GenerateGroupOptions).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error).toMatchObject({ code: 'InvalidInput', argument });
  });

  it('scoreCompletions rejects empty batches and unknown token ids', async () => {
    await expect(tiny.scoreCompletions({ prompt: 'x', completions: [] })).rejects.toMatchObject({ argument: 'completions' });
    await expect(tiny.scoreCompletions({ prompt: 'x', completions: [[1, 102]] })).rejects.toMatchObject({ argument: 'completions[0]' });
    expect(await tiny.scoreCompletions({ prompt: 'x', completions: [[]] })).toEqual({ logprobs: [[]], entropies: [[]] });
  });

  describe('model files', () => {
    let broken = '';
    beforeAll(async () => {
      broken = join(dirname(otherDir), 'broken');
    });
    const copy = async (name: string) => {
      const dir = join(broken, name);
      await cp(TINY_DIR, dir, { recursive: true });
      return dir;
    };
    it.each([
      ['a folder that does not exist', async () => join(broken, 'nothing-here'), /does not exist/],
      ['a file instead of a folder', async () => join(await copy('file'), 'config.json'), /is a file/],
      ['a missing model.onnx', async () => {
        const dir = await copy('no-onnx');
        await unlink(join(dir, 'onnx/model.onnx'));
        return dir;
      }, /model\.onnx/],
      ['a truncated model.onnx', async () => {
        const dir = await copy('truncated');
        await truncate(join(dir, 'onnx/model.onnx'), 100_000);
        return dir;
      }, /Could not load the model/],
      ['a corrupt config.json', async () => {
        const dir = await copy('bad-config');
        await writeFile(join(dir, 'config.json'), '{ "model_type": ');
        return dir;
      }, /Could not load the model/],
      ['a missing tokenizer.json', async () => {
        const dir = await copy('no-tokenizer');
        await unlink(join(dir, 'tokenizer.json'));
        return dir;
      }, /tokenizer\.json/],
    ])('%s gives a ModelLoadError', async (_, make, message) => {
      const error = await loadOnnxPolicy({ model: await make() }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ModelLoadError);
      expect((error as Error).message).toMatch(message);
    });
  });

  it("rejects browser devices in Node and calls after dispose", async () => {
    await expect(loadOnnxPolicy({ model: TINY_DIR, device: 'wasm' })).rejects.toMatchObject({ argument: 'device' });
    const policy = await loadOnnxPolicy({ model: TINY_DIR });
    await policy.dispose();
    await expect(policy.generateGroup(base)).rejects.toMatchObject({ argument: 'policy' });
  });
});
