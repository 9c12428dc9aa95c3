/**
 * Constrained decoding through the ONNX engine (bundled model, character tokenizer, CPU): every
 * completion of a random schema parses and validates; `sampledLogprobs` are the log-probs of the
 * masked, temperature-scaled distribution recomputed from scored logits; `logprobs` stay the
 * unconstrained ones (scoreCompletions); a request without a format is unchanged.
 */
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/index.js';
import { compileResponseFormat, tokenVocabulary } from '../../lib/method.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { isAllowed } from '../../lib/constrain/mask.js';
import { sampleToken } from '../../lib/policy/sampling.js';
import { tokenBytesTable } from '../../lib/policy/onnx/token-table.js';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { schemaArbitrary } from './schemas.js';

const ajv = new Ajv({ strict: false });
let policy: OnnxPolicy;
let bytes: Uint8Array[];
beforeAll(async () => {
  const path = await bundledModelPath();
  policy = await loadOnnxPolicy({ model: path, device: 'cpu' });
  bytes = tokenBytesTable(JSON.parse(await readFile(join(path, 'tokenizer.json'), 'utf8')), 102);
});
afterAll(() => policy?.dispose());

describe('sampleToken with a mask', () => {
  it('draws what the same row with the disallowed logits at -Infinity draws, with the unmasked logprob', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -8, max: 8, noNaN: true }), { minLength: 2, maxLength: 80 }),
        fc.integer(),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        fc.constantFrom(
          { temperature: 0.7, topK: 0, topP: 1, minP: 0 },
          { temperature: 1.3, topK: 5, topP: 1, minP: 0 },
          { temperature: 1, topK: 0, topP: 0.8, minP: 0 },
          { temperature: 1, topK: 10, topP: 0.9, minP: 0.05 },
          { temperature: 0, topK: 0, topP: 1, minP: 0 },
        ),
        (row, bits, u, config) => {
          const n = row.length;
          const mask = new Uint32Array((n + 31) >>> 5);
          for (let i = 0; i < n; i++) if ((bits >>> (i % 31)) & 1 || i === n - 1) mask[i >>> 5] |= 1 << (i & 31);
          const logits = Float32Array.from(row);
          const masked = sampleToken(logits, 0, n, config, u, undefined, mask);
          const blocked = Float32Array.from(row, (v, i) => (isAllowed(mask, i) ? v : -Infinity));
          const reference = sampleToken(blocked, 0, n, config, u);
          expect(masked.tokenId).toBe(reference.tokenId);
          expect(isAllowed(mask, masked.tokenId)).toBe(true);
          expect(masked.sampledLogprob).toBeCloseTo(reference.sampledLogprob, 9);
          expect(masked.logprob).toBeCloseTo(scoreLogprob(logits, masked.tokenId, config.temperature), 9);
        },
      ),
      { numRuns: 300, seed: 19 },
    );
  });
});

/** log softmax(logits / T)[id] (T = 1 for greedy, as sampling.ts defines it). */
function scoreLogprob(logits: Float32Array, id: number, temperature: number): number {
  const t = temperature === 0 ? 1 : temperature;
  const z = Array.from(logits, (v) => v / t);
  const max = Math.max(...z);
  return z[id] - max - Math.log(z.reduce((s, v) => s + Math.exp(v - max), 0));
}

describe('responseFormat on the ONNX engine', () => {
  it('says it honours formats', () => {
    expect(policy.info.responseFormats).toBe(true);
  });

  it('every completion of a random schema parses and validates', async () => {
    await fc.assert(
      fc.asyncProperty(schemaArbitrary(false), fc.integer({ min: 0, max: 2 ** 31 }), async (schema, seed) => {
        const validate = ajv.compile(schema);
        const group = await policy.generateGroup({ prompt: 'JSON:', groupSize: 3, maxNewTokens: 160, seed, responseFormat: { type: 'json_schema', schema } });
        for (const c of group.completions) {
          // Near the budget only tokens after which the output can still close are kept, so a
          // row that runs to maxNewTokens is complete too.
          const value: unknown = JSON.parse(c.text);
          if (!validate(value)) throw new Error(`${c.text} does not validate against ${JSON.stringify(schema)}: ${ajv.errorsText(validate.errors)}`);
        }
      }),
      { numRuns: 12, seed: 19 },
    );
  }, 120_000);

  it('sampledLogprobs are the masked distribution, logprobs the unconstrained one', async () => {
    const format = { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'boolean' }, b: { enum: ['x', 'yy'] } }, required: ['a', 'b'] } } as const;
    const temperature = 0.8;
    const group = await policy.generateGroup({ prompt: 'P', groupSize: 2, maxNewTokens: 90, seed: 5, temperature, responseFormat: format });
    const scored = await policy.scoreCompletions({ prompt: 'P', completions: group.completions.map((c) => c.tokenIds), temperature });
    const grammar = compileResponseFormat(format);
    const vocabulary = tokenVocabulary(bytes, [2, 5]);
    for (const [i, c] of group.completions.entries()) {
      expect(c.finishReason).toBe('eos'); // the longest answer fits, so the budget never narrows the mask
      expect(JSON.parse(c.text)).toMatchObject({ b: expect.any(String) });
      c.logprobs.forEach((lp, t) => expect(Math.abs(lp - scored.logprobs[i][t])).toBeLessThan(1e-4));
      // log p_masked(token) = logprob - log(sum of p over the allowed tokens), each allowed
      // token's p scored as a one-token continuation of the prefix.
      const matcher = grammar.matcher(vocabulary);
      for (const [t, id] of c.tokenIds.entries()) {
        const mask = matcher.allowed();
        const allowed = Array.from({ length: 102 }, (_, k) => k).filter((k) => isAllowed(mask, k));
        const prefix = c.tokenIds.slice(0, t);
        const next = await policy.scoreCompletions({ prompt: 'P', completions: allowed.map((k) => [...prefix, k]), temperature });
        const logZ = Math.log(next.logprobs.reduce((s, lps) => s + Math.exp(lps[t]), 0));
        expect(Math.abs(c.sampledLogprobs![t] - (c.logprobs[t] - logZ))).toBeLessThan(1e-4);
        matcher.accept(id);
      }
    }
  });

  it('a format that fails while decoding fails its own request alone; the batch beside it goes on', async () => {
    const good = { prompt: 'Hello', groupSize: 2, maxNewTokens: 12, seed: 4 };
    const alone = await policy.generateGroup(good);
    // After its `a`, the format needs a character this ASCII vocabulary cannot write: the row
    // fails at its second step. The unconstrained request is decoding already when it joins.
    const beside = policy.generateGroup(good);
    const bad = policy.generateGroup({ prompt: 'Hi', groupSize: 2, maxNewTokens: 30, seed: 1, responseFormat: { type: 'regex', pattern: 'a\u4e2d' } });
    await expect(bad).rejects.toThrow(/No token of this vocabulary continues the constrained output/);
    expect(await beside).toEqual(alone);
  }, 120_000);

  it('.*a.{20} (about 2^20 DFA states if determinised) decodes: the DFA grows only where rows go', async () => {
    const result = await policy.generateGroup({ prompt: 'Hi', groupSize: 2, maxNewTokens: 40, seed: 1, responseFormat: { type: 'regex', pattern: '.*a.{20}' } });
    for (const c of result.completions) if (c.finishReason === 'eos') expect(c.text).toMatch(/^.*a.{20}$/su);
  }, 120_000);

  it('a request without a format is the same bit for bit', async () => {
    const options = { prompt: 'Hello', groupSize: 3, maxNewTokens: 20, seed: 9, topK: 20 };
    const [a, b] = [await policy.generateGroup(options), await policy.generateGroup({ ...options, responseFormat: undefined })];
    expect(b).toEqual(a);
    await policy.generateGroup({ ...options, responseFormat: { type: 'json_object' } });
    expect(await policy.generateGroup(options)).toEqual(a);
  });

  it('greedy decoding takes the best allowed token; a bad schema is a typed error', async () => {
    const group = await policy.generateGroup({ prompt: 'Q', groupSize: 1, maxNewTokens: 30, temperature: 0, responseFormat: { type: 'regex', pattern: '(yes|no)' } });
    expect(['yes', 'no']).toContain(group.completions[0].text);
    await expect(policy.generateGroup({ prompt: 'Q', groupSize: 1, maxNewTokens: 5, responseFormat: { type: 'json_schema', schema: { type: 'nope' } } })).rejects.toBeInstanceOf(InvalidInputError);
  });
});
