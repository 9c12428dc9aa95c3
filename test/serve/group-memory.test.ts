/** The server's group memory over HTTP: bounded by bytes, evicted groups answered with a 410, groups capped at the largest n. */
import { afterEach, describe, expect, it } from 'vitest';
import { post, startToyServer, type ToyServer } from './helpers.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- response bodies under test

let toy: ToyServer | undefined;
afterEach(() => toy?.server.close());

const ask = (n: number, maxTokens: number, extra: Record<string, unknown> = {}) => ({
  model: 'toy',
  messages: [{ role: 'user', content: 'hello' }],
  n,
  max_tokens: maxTokens,
  ...extra,
});

async function json(res: Response): Promise<{ status: number; body: Json }> {
  return { status: res.status, body: await res.json() };
}

describe('a byte-bounded group memory', () => {
  it('evicts the oldest groups past maxGroupBytes and answers their tells and look-ups with 410 group_evicted', async () => {
    toy = await startToyServer({ maxGroupBytes: 200_000 });
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const { status, body } = await json(await post(`${toy.url}/chat/completions`, ask(8, 32, { logprobs: true, top_logprobs: 5, seed: i })));
      expect(status).toBe(200);
      ids.push(body.id);
    }
    const health = await (await fetch(toy.url.replace(/\/v1$/, '/health'))).json();
    expect(health.groups.max_bytes).toBe(200_000);
    expect(health.groups.bytes).toBeLessThanOrEqual(200_000);
    expect(health.groups.evicted).toBeGreaterThan(0);
    expect(health.groups.stored + health.groups.evicted).toBe(8);

    const oldest = ids[0];
    const told = await json(await post(`${toy.url}/feedback`, { group_id: oldest, rewards: Array(8).fill(1) }));
    expect(told.status).toBe(410);
    expect(told.body.error).toMatchObject({ code: 'group_evicted', type: 'not_found_error' });
    expect(told.body.error.message).toContain(oldest);
    const byCompletion = await json(await post(`${toy.url}/feedback`, { rewards: { [`${oldest}-0`]: 1, [`${oldest}-1`]: 0 } }));
    expect(byCompletion.status).toBe(410);
    const shown = await json(await fetch(`${toy.url}/groups/${oldest}`));
    expect(shown.status).toBe(410);
    expect(shown.body.error.code).toBe('group_evicted');

    // The newest group is still there and can be told; an id never handed out stays a 404.
    expect((await post(`${toy.url}/feedback`, { group_id: ids[7], rewards: Array(8).fill(1) })).status).toBe(200);
    expect((await fetch(`${toy.url}/groups/chatcmpl-000000000000000000000000`)).status).toBe(404);
  });

  it('keeps everything while it fits', async () => {
    toy = await startToyServer({ maxGroupBytes: 50_000_000 });
    const first = await json(await post(`${toy.url}/chat/completions`, ask(4, 8)));
    for (let i = 0; i < 5; i++) await post(`${toy.url}/chat/completions`, ask(4, 8));
    expect((await fetch(`${toy.url}/groups/${first.body.id}`)).status).toBe(200);
  });

  it('refuses a bound that is not a positive number of bytes', async () => {
    await expect(startToyServer({ maxGroupBytes: 0 })).rejects.toThrow(/maxGroupBytes/);
  });
});

describe('completions told over several requests', () => {
  it('cannot grow a group past the largest n', async () => {
    toy = await startToyServer({ maxN: 4 });
    const made = await json(await post(`${toy.url}/feedback`, { prompt: 'x', completions: [{ text: 'a', reward: 1 }, { text: 'b', reward: 0 }] }));
    expect(made.status).toBe(200);
    const id = made.body.groups[0].id;
    const url = toy.url;
    const more = (texts: string[]) => post(`${url}/feedback`, { group_id: id, completions: texts.map((text) => ({ text, reward: 1 })) });
    expect((await more(['c'])).status).toBe(200);
    expect((await more(['d'])).status).toBe(200);
    const over = await json(await more(['e']));
    expect(over.status).toBe(400);
    expect(over.body.error).toMatchObject({ param: 'completions' });
    expect(over.body.error.message).toMatch(/at most 4/);
    const group = await json(await fetch(`${toy.url}/groups/${id}`));
    expect(group.body.completions).toHaveLength(4);
    // Rewards alone still go to a full group.
    expect((await post(`${toy.url}/feedback`, { group_id: id, rewards: [1, 0, 1, 0] })).status).toBe(200);
  });

  it('holds when tells race to add completions', async () => {
    toy = await startToyServer({ maxN: 4 });
    const url = toy.url;
    const asked = await json(await post(`${url}/chat/completions`, ask(2, 4)));
    const racing = await Promise.all(
      Array.from({ length: 4 }, (_, i) => post(`${url}/feedback`, { group_id: asked.body.id, completions: [{ text: `r${i}`, reward: i }] })),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([200, 200, 400, 400]);
    expect((await json(await fetch(`${toy.url}/groups/${asked.body.id}`))).body.completions).toHaveLength(4);
  });
});
