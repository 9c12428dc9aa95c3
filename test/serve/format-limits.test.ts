/**
 * `response_format` at the limits, over HTTP on 127.0.0.1 against the server on the bundled skill
 * model, with the official `openai` client: formats nested thousands deep are a 400 naming the
 * limit (never a stack overflow's 500); formats too large to compile are a 400 naming the state
 * limit, refused before any automaton state is built (the work is bounded by the format's size,
 * not by how long it takes), while `/health` keeps answering; numeric schemas and string formats
 * decode on the real model, through the server and through generateGroup.
 */
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOnnxPolicy, skillModelPath, type OnnxPolicy } from '../../lib/onnx.js';
import { Nfa } from '../../lib/constrain/nfa.js';
import { serve } from '../../lib/server.js';

let policy: OnnxPolicy;
let server: Awaited<ReturnType<typeof serve>>;
let client: OpenAI;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: await skillModelPath(), device: 'cpu' });
  server = await serve({ policy, port: 0, host: '127.0.0.1', modelId: 'skill' });
  client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await server?.close();
  await policy?.dispose();
});

const ajv = new Ajv({ strict: false });
addFormats.default(ajv);
const messages = [{ role: 'user' as const, content: 'Score this answer from 0 to 9.' }];

function nested(depth: number, wrap: (inner: unknown) => unknown): unknown {
  let schema: unknown = { type: 'string' };
  for (let i = 0; i < depth; i++) schema = wrap(schema);
  return schema;
}

async function refusal(schema: unknown): Promise<InstanceType<typeof OpenAI.BadRequestError>> {
  const error = await client.chat.completions
    .create({ model: 'skill', messages, max_tokens: 8, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: schema as Record<string, unknown> } } })
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(OpenAI.BadRequestError);
  return error as InstanceType<typeof OpenAI.BadRequestError>;
}

/** Counts the automaton states built while `run` is in flight (the server runs in this process). */
async function statesBuiltDuring<T>(run: () => Promise<T>): Promise<{ result: T; states: number }> {
  const original = Nfa.prototype.state;
  let states = 0;
  Nfa.prototype.state = function (this: Nfa) {
    states++;
    return original.call(this);
  };
  try {
    return { result: await run(), states };
  } finally {
    Nfa.prototype.state = original;
  }
}

describe('formats nested thousands deep', () => {
  const cases: Array<[string, unknown]> = [
    ['properties', nested(1000, (inner) => ({ type: 'object', properties: { a: inner }, required: ['a'] }))],
    ['items', nested(1000, (inner) => ({ type: 'array', items: inner }))],
    ['anyOf', nested(1000, (inner) => ({ anyOf: [inner, { type: 'null' }] }))],
    ['$ref chains', { $defs: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`d${i}`, i === 999 ? { type: 'string' } : { $ref: `#/$defs/d${i + 1}` }])), $ref: '#/$defs/d0' }],
    ['a pattern of 5000 nested groups', { type: 'string', pattern: `${'('.repeat(5000)}a${')'.repeat(5000)}` }],
  ];
  it.each(cases)('%s: a 400 that names the limit', async (_name, schema) => {
    const error = await refusal(schema);
    expect(error.param).toBe('response_format');
    expect(error.message).toMatch(/more than (64|100|256) deep/);
  });

  it('enum values: a 400 naming the limit (sent as raw JSON: JSON.stringify itself overflows at this depth)', async () => {
    const schema = `{"enum":[${'['.repeat(5000)}${']'.repeat(5000)}]}`;
    const body = `{"model":"skill","messages":[{"role":"user","content":"x"}],"max_tokens":4,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":${schema}}}}`;
    const response = await fetch(`${server.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { param: string; message: string } };
    expect(error.param).toBe('response_format');
    expect(error.message).toMatch(/more than 256 deep/);
  });

  it('enum values 5000 deep, through generateGroup: an InvalidInputError, not a stack overflow', async () => {
    let deep: unknown = [];
    for (let i = 0; i < 5000; i++) deep = [deep];
    const error = await policy
      .generateGroup({ prompt: 'x', groupSize: 1, maxNewTokens: 4, responseFormat: { type: 'json_schema', schema: { enum: [deep] } } })
      .catch((e: unknown) => e as Error & { argument?: string });
    expect(error).toMatchObject({ code: 'InvalidInput', argument: 'responseFormat.schema' });
  });

  it('a regex format of 5000 nested groups, through the library: an InvalidInputError naming the pattern', async () => {
    const error = await policy
      .generateGroup({ prompt: 'x', groupSize: 1, maxNewTokens: 4, responseFormat: { type: 'regex', pattern: `${'('.repeat(5000)}a${')'.repeat(5000)}` } })
      .catch((e: unknown) => e as Error & { argument?: string });
    expect(error).toMatchObject({ code: 'InvalidInput', argument: 'responseFormat.pattern' });
    expect((error as Error).message).toMatch(/more than 100 deep/);
  });
});

describe('formats too large to compile', () => {
  const hostile: Array<[string, unknown]> = [
    ['a{0,100000}', { type: 'string', pattern: 'a{0,100000}' }],
    ['nested repeats', { type: 'string', pattern: '((a{0,100}){0,100}){0,100}' }],
    ['maxLength of a million', { type: 'string', maxLength: 1_000_000 }],
    ['a patterned maxLength of a million', { type: 'string', pattern: '^[a-z]*$', maxLength: 1_000_000 }],
    ['maxItems of a million', { type: 'array', items: { type: 'object', properties: { a: { type: 'integer' } } }, maxItems: 1_000_000 }],
    ['a $ref used ten times at each of six levels', { $defs: Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`l${i}`, { type: 'array', items: i === 5 ? { type: 'string', maxLength: 8 } : { $ref: `#/$defs/l${i + 1}` }, minItems: 10, maxItems: 10 }])), $ref: '#/$defs/l0' }],
    ['multipleOf a billion', { type: 'integer', multipleOf: 1_000_000_000 }],
  ];

  it.each(hostile)('%s: a 400 naming the state limit, before any state is built', async (_name, schema) => {
    const { result: error, states } = await statesBuiltDuring(() => refusal(schema));
    expect(error.param).toBe('response_format');
    expect(error.message).toMatch(/more than the limit of 200000 automaton states \(maxStates\)/);
    // Only a pattern's own few states, never the product.
    expect(states).toBeLessThan(1000);
  });

  it('/health answers while six hostile formats at a time are refused', async () => {
    const health: Array<Promise<{ status: number; body: { status: string } }>> = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        health.push(fetch(`${server.url.replace(/\/v1$/, '')}/health`).then(async (r) => ({ status: r.status, body: (await r.json()) as { status: string } })));
        await health[health.length - 1];
      }
    })();
    const { result: errors, states } = await statesBuiltDuring(() => Promise.all(Array.from({ length: 3 }, () => Promise.all(hostile.slice(0, 6).map(([, schema]) => refusal(schema)))).flat()));
    polling = false;
    await poller;
    for (const error of (await Promise.all(errors)).flat()) expect(error.message).toMatch(/maxStates/);
    expect(states).toBeLessThan(6 * 3 * 1000);
    expect(health.length).toBeGreaterThan(0);
    for (const answer of await Promise.all(health)) expect(answer).toMatchObject({ status: 200, body: { status: 'ok' } });
  });
});

describe('numeric schemas and string formats on the skill model', () => {
  const judge = {
    type: 'object',
    properties: {
      score: { type: 'integer', minimum: 0, maximum: 9 },
      confidence: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
      weight: { type: 'integer', minimum: -20, maximum: 20, multipleOf: 5 },
      day: { type: 'string', format: 'date' },
    },
    required: ['score', 'confidence', 'weight', 'day'],
    additionalProperties: false,
  };
  const validate = ajv.compile(judge);

  it('through the server: every choice validates, scores are single digits', async () => {
    const response = await client.chat.completions.create({
      model: 'skill',
      messages,
      n: 6,
      seed: 12,
      max_tokens: 160,
      response_format: { type: 'json_schema', json_schema: { name: 'judge', schema: judge, strict: true } },
    });
    expect(response.choices).toHaveLength(6);
    for (const choice of response.choices) {
      const value = JSON.parse(choice.message.content!) as { score: number };
      if (!validate(value)) throw new Error(`${choice.message.content}: ${ajv.errorsText(validate.errors)}`);
      expect(String(value.score)).toMatch(/^[0-9]$/);
    }
  });

  it('through generateGroup: every completion validates', async () => {
    const group = await policy.generateGroup({ messages, groupSize: 8, seed: 5, maxNewTokens: 160, responseFormat: { type: 'json_schema', schema: judge } });
    for (const c of group.completions) {
      expect(c.finishReason).not.toBe('length');
      if (!validate(JSON.parse(c.text))) throw new Error(`${c.text}: ${ajv.errorsText(validate.errors)}`);
    }
  });
});
