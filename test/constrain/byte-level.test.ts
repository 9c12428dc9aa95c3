/**
 * Constrained decoding through the ONNX engine (CPU) on a model with a byte-level BPE tokenizer
 * (byte-level-model.ts): multi-byte tokens that cross JSON's structure, and byte tokens that write
 * UTF-8 one byte at a time. Every completion of a random schema, non-ASCII text included, parses
 * and validates (ajv); `sampledLogprobs` are the masked distribution's.
 */
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResponseFormat } from '../../lib/index.js';
import { compileResponseFormat, tokenVocabulary } from '../../lib/method.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { isAllowed } from '../../lib/constrain/mask.js';
import { tokenBytesTable } from '../../lib/policy/onnx/token-table.js';
import { buildByteLevelModel } from './byte-level-model.js';
import { schemaArbitrary } from './schemas.js';

const ajv = new Ajv({ strict: false });
let policy: OnnxPolicy;
let bytes: Uint8Array[];
let dir = '';
beforeAll(async () => {
  dir = await buildByteLevelModel();
  policy = await loadOnnxPolicy({ model: dir, device: 'cpu' });
  bytes = tokenBytesTable(JSON.parse(await readFile(join(dir, 'tokenizer.json'), 'utf8')), 301);
}, 120_000);
afterAll(async () => {
  await policy?.dispose();
  // The model's temporary folder (buildByteLevelModel made it, one level above the model).
  if (dir) await rm(dirname(dir), { recursive: true, force: true });
});

describe('responseFormat with a byte-level BPE tokenizer', () => {
  it('tokenizes with its merges and says it honours formats', async () => {
    expect(policy.info.responseFormats).toBe(true);
    const ids = await policy.encode('{"a": true}');
    expect(ids.length).toBeLessThan('{"a": true}'.length); // merges such as {" and ": and true
    expect(await policy.decode(ids)).toBe('{"a": true}');
  });

  it('every completion of a random schema, non-ASCII text included, parses and validates', async () => {
    await fc.assert(
      fc.asyncProperty(schemaArbitrary(true), fc.integer({ min: 0, max: 2 ** 31 }), async (schema, seed) => {
        const validate = ajv.compile(schema);
        const group = await policy.generateGroup({ prompt: 'JSON:', groupSize: 3, maxNewTokens: 200, seed, responseFormat: { type: 'json_schema', schema } });
        for (const c of group.completions) {
          const value: unknown = JSON.parse(c.text);
          if (!validate(value)) throw new Error(`${c.text} does not validate against ${JSON.stringify(schema)}: ${ajv.errorsText(validate.errors)}`);
        }
      }),
      { numRuns: 12, seed: 1907 },
    );
  }, 180_000);

  it('sampledLogprobs are the masked distribution, logprobs the unconstrained one', async () => {
    const format: ResponseFormat = { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'boolean' }, s: { type: 'string', maxLength: 3 } }, required: ['a', 's'] } };
    const temperature = 0.9;
    const group = await policy.generateGroup({ prompt: 'P', groupSize: 2, maxNewTokens: 80, seed: 8, temperature, responseFormat: format });
    const completions = group.completions.map((c) => c.tokenIds);
    const scored = await policy.scoreCompletions({ prompt: 'P', completions, temperature });
    const grammar = compileResponseFormat(format);
    const vocabulary = tokenVocabulary(bytes, [2, 5]);
    for (const [i, c] of group.completions.entries()) {
      expect(c.finishReason).toBe('eos');
      c.logprobs.forEach((lp, t) => expect(Math.abs(lp - scored.logprobs[i][t])).toBeLessThan(1e-4));
      const matcher = grammar.matcher(vocabulary);
      const continuations: Array<{ step: number; ids: number[] }> = [];
      for (const [t, id] of c.tokenIds.entries()) {
        for (let k = 0; k < 301; k++) if (isAllowed(matcher.allowed(), k)) continuations.push({ step: t, ids: [...c.tokenIds.slice(0, t), k] });
        matcher.accept(id);
      }
      const next = await policy.scoreCompletions({ prompt: 'P', completions: continuations.map((x) => x.ids), temperature });
      const mass = new Float64Array(c.tokenIds.length);
      continuations.forEach(({ step }, j) => (mass[step] += Math.exp(next.logprobs[j][step])));
      c.tokenIds.forEach((_, t) => expect(Math.abs(c.sampledLogprobs![t] - (c.logprobs[t] - Math.log(mass[t])))).toBeLessThan(1e-4));
    }
  }, 120_000);
});
