/**
 * End to end on the real thing: the official `openai` client, unmodified, against the
 * `webgrpo serve` process on the bundled tiny ONNX model (Node CPU). Every answer is checked
 * against the same model loaded here with `loadOnnxPolicy`: the same seed, model and backend
 * give the same group, so the server must return exactly what the policy samples.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeAdvantages } from '../../lib/math/advantages.js';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import type { ChatMessage, GenerateGroupOptions, GroupResult } from '../../lib/core/policy.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const modelDir = join(root, 'public/models/webgrpo-tiny');

let child: ChildProcess;
let exit: Promise<number | null>;
let client: OpenAI;
let local: OnnxPolicy;
const messages: ChatMessage[] = [{ role: 'user', content: 'Alphabetise: pear, fig, apple' }];

beforeAll(async () => {
  child = spawn(join(root, 'node_modules/.bin/tsx'), [join(root, 'lib/cli/main.ts'), 'serve', '--model', modelDir, '--port', '0', '--api-key', 'sk-e2e'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  exit = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (d) => {
      stdout += d;
      const match = /at (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(stdout);
      if (match) resolve(match[1]);
    });
    void exit.then((code) => reject(new Error(`webgrpo serve exited with ${code}:\n${stdout}\n${stderr}`)));
  });
  client = new OpenAI({ baseURL: url, apiKey: 'sk-e2e', maxRetries: 0 });
  local = await loadOnnxPolicy({ model: modelDir, device: 'cpu' });
});

afterAll(async () => {
  await local?.dispose();
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await exit;
  }
});

function direct(options: Omit<GenerateGroupOptions, 'maxNewTokens'> & { maxNewTokens: number }): Promise<GroupResult> {
  return local.generateGroup(options);
}

describe('official openai client against webgrpo serve on the bundled model', () => {
  it('lists the served model', async () => {
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['webgrpo-tiny']);
  });

  it('samples n > 1 choices with the seed and exact log-probs', async () => {
    const params = { model: 'webgrpo-tiny', messages, n: 4, seed: 7, temperature: 0.9, max_tokens: 16, logprobs: true };
    const response = await client.chat.completions.create(params);
    const expected = await direct({ messages, groupSize: 4, seed: 7, temperature: 0.9, maxNewTokens: 16 });
    expect(response.choices.map((c) => c.message.content)).toEqual(expected.completions.map((c) => c.text));
    response.choices.forEach((choice, i) => {
      const tokens = choice.logprobs!.content!;
      expect(tokens).toHaveLength(expected.completions[i].tokenIds.length);
      tokens.forEach((t, j) => expect(t.logprob).toBeCloseTo(expected.completions[i].logprobs[j], 9));
      expect(choice.finish_reason).toBe(expected.completions[i].finishReason === 'length' ? 'length' : 'stop');
    });
    expect(response.usage).toMatchObject({ prompt_tokens: expected.usage.promptTokens, completion_tokens: expected.usage.completionTokens });
    const again = await client.chat.completions.create(params);
    expect(again.choices.map((c) => c.message.content)).toEqual(response.choices.map((c) => c.message.content));
  });

  it('streams n = 1 and n = 2 exactly as it answers whole', async () => {
    for (const n of [1, 2]) {
      const params = { model: 'webgrpo-tiny', messages, n, seed: 11, max_tokens: 20, stop: ['e'] };
      const whole = await client.chat.completions.create(params);
      const texts = new Array<string>(n).fill('');
      const finish = new Array<string | null>(n).fill(null);
      for await (const chunk of await client.chat.completions.create({ ...params, stream: true })) {
        for (const choice of chunk.choices) {
          texts[choice.index] += choice.delta.content ?? '';
          finish[choice.index] = choice.finish_reason ?? finish[choice.index];
        }
      }
      expect(texts).toEqual(whole.choices.map((c) => c.message.content));
      expect(finish).toEqual(whole.choices.map((c) => c.finish_reason));
    }
  });

  it('completes raw text on the legacy endpoint', async () => {
    const response = await client.completions.create({ model: 'webgrpo-tiny', prompt: 'Once upon', n: 2, seed: 3, max_tokens: 12, logprobs: 0 });
    const expected = await direct({ prompt: 'Once upon', groupSize: 2, seed: 3, maxNewTokens: 12 });
    expect(response.choices.map((c) => c.text)).toEqual(expected.completions.map((c) => c.text));
    response.choices.forEach((c, i) => c.logprobs!.token_logprobs!.forEach((lp, j) => expect(lp).toBeCloseTo(expected.completions[i].logprobs[j], 9)));
  });

  it('serves many concurrent clients without mixing their groups', async () => {
    const asks = Array.from({ length: 8 }, (_, i) => ({ messages: [{ role: 'user' as const, content: `client ${i}` }], seed: 100 + i, n: 1 + (i % 3) }));
    const responses = await Promise.all(
      asks.map((a) =>
        new OpenAI({ baseURL: client.baseURL, apiKey: 'sk-e2e', maxRetries: 0 }).chat.completions.create({
          model: 'webgrpo-tiny',
          messages: a.messages,
          n: a.n,
          seed: a.seed,
          max_tokens: 10,
        }),
      ),
    );
    for (const [i, a] of asks.entries()) {
      const expected = await direct({ messages: a.messages, groupSize: a.n, seed: a.seed, maxNewTokens: 10 });
      expect(responses[i].choices.map((c) => c.message.content)).toEqual(expected.completions.map((c) => c.text));
    }
  });

  it('turns feedback on a response into advantages that match computeAdvantages', async () => {
    const response = await client.chat.completions.create({ model: 'webgrpo-tiny', messages, n: 4, seed: 1, max_tokens: 10 });
    const rewards = response.choices.map((c) => ((c.message.content ?? '').includes('a') ? 1 : 0) + (c.message.content ?? '').length / 100);
    const told = await client.post<{ groups: { id: string; completions: { advantage: number }[] }[] }>('/feedback', {
      body: { group_id: response.id, rewards },
    });
    expect(told.groups[0].id).toBe(response.id);
    expect(told.groups[0].completions.map((c) => c.advantage)).toEqual(computeAdvantages(rewards, { groupSize: 4 }).advantages);
  });

  it('shuts down cleanly on SIGTERM', async () => {
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
  });
});
