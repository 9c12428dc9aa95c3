/**
 * OpenAI's `response_format` through the official `openai` client against the server on the
 * bundled model (Node CPU): every choice of a `json_schema` request validates, streamed or not;
 * `json_object` gives an object; a schema outside the supported subset is a 400; `/v1/models`
 * lists the formats.
 */
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { openAiPolicy } from '../../lib/openai.js';
import { serve } from '../../lib/server.js';

let policy: OnnxPolicy;
let server: Awaited<ReturnType<typeof serve>>;
let client: OpenAI;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: await bundledModelPath(), device: 'cpu' });
  server = await serve({ policy, port: 0, host: '127.0.0.1', modelId: 'tiny' });
  client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await server?.close();
  await policy?.dispose();
});

const schema = {
  type: 'object',
  properties: { verdict: { enum: ['good', 'bad'] }, score: { type: 'integer' }, note: { type: 'string', maxLength: 12 } },
  required: ['verdict', 'score', 'note'],
  additionalProperties: false,
};
const validate = new Ajv({ strict: false }).compile(schema);
const messages = [{ role: 'user' as const, content: 'Judge this.' }];

describe('response_format on /v1/chat/completions', () => {
  it('json_schema: every choice validates', async () => {
    const response = await client.chat.completions.create({
      model: 'tiny',
      messages,
      n: 4,
      seed: 3,
      max_tokens: 120,
      response_format: { type: 'json_schema', json_schema: { name: 'verdict', schema, strict: true } },
    });
    expect(response.choices).toHaveLength(4);
    for (const choice of response.choices) expect(validate(JSON.parse(choice.message.content!))).toBe(true);
  });

  it('json_schema, streamed: the joined deltas validate', async () => {
    const stream = await client.chat.completions.create({
      model: 'tiny',
      messages,
      n: 2,
      seed: 4,
      max_tokens: 120,
      stream: true,
      response_format: { type: 'json_schema', json_schema: { name: 'verdict', schema } },
    });
    const texts = ['', ''];
    for await (const chunk of stream) for (const choice of chunk.choices) texts[choice.index] += choice.delta.content ?? '';
    for (const text of texts) expect(validate(JSON.parse(text))).toBe(true);
  });

  it('json_object: an object', async () => {
    const response = await client.chat.completions.create({ model: 'tiny', messages, seed: 5, max_tokens: 120, response_format: { type: 'json_object' } });
    const value: unknown = JSON.parse(response.choices[0].message.content!);
    expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
  });

  it('a schema it cannot compile is a 400 naming response_format', async () => {
    const error = await client.chat.completions
      .create({ model: 'tiny', messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', format: 'nope', pattern: '(' } } } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('response_format');
  });

  it('openAiPolicy forwards responseFormat to the server', async () => {
    const remote = openAiPolicy({ baseURL: server.url, model: 'tiny', responseFormats: true });
    const group = await remote.generateGroup({ messages, groupSize: 3, seed: 8, maxNewTokens: 120, responseFormat: { type: 'json_schema', schema } });
    for (const c of group.completions) expect(validate(JSON.parse(c.text))).toBe(true);
  });

  it('/v1/models lists the formats', async () => {
    const models = await client.models.list();
    expect((models.data[0] as unknown as { capabilities: { response_format: string[] } }).capabilities.response_format).toEqual(['text', 'json_object', 'json_schema']);
  });
});
