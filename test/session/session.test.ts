import { describe, expect, it } from 'vitest';
import { AbortError, BusyError, InvalidInputError, NotFoundError } from '../../lib/errors.js';
import { computeAdvantages } from '../../lib/math/advantages.js';
import { MemorySessionStore } from '../../lib/store/memory/groups.js';
import { createTaskQueue } from '../../lib/session/queue.js';
import { createSession } from '../../lib/session/session.js';
import type { GroupRecord, SessionStore } from '../../lib/store/records/session.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';

function sequentialIds() {
  let next = 0;
  return () => `g${next++}`;
}

describe('createSession: ask', () => {
  it('returns a group of n completions with ids, tokens and log-probs the policy can reproduce', async () => {
    const policy = createToyPolicy();
    const session = createSession({ policy, newId: sequentialIds() });
    const asked = await session.ask({ prompt: 'Sort: b a c', n: 4, seed: 7, temperature: 0.8, maxNewTokens: 24 });
    expect(asked.groupId).toBe('g0');
    expect(asked.completions.map((c) => c.id)).toEqual(['g0-0', 'g0-1', 'g0-2', 'g0-3']);
    expect(asked.promptTokenIds).toEqual(await policy.encode!('Sort: b a c'));

    const reference = await createToyPolicy().generateGroup({ prompt: 'Sort: b a c', groupSize: 4, seed: 7, temperature: 0.8, maxNewTokens: 24 });
    expect(asked.completions.map((c) => c.text)).toEqual(reference.completions.map((c) => c.text));
    for (const c of asked.completions) {
      expect(c.source).toBe('policy');
      expect(c.logprobs).toHaveLength(c.tokenIds.length);
    }
    const rescored = await policy.scoreCompletions!({ prompt: 'Sort: b a c', completions: asked.completions.map((c) => c.tokenIds), temperature: 0.8 });
    asked.completions.forEach((c, i) => c.logprobs.forEach((lp, t) => expect(lp).toBeCloseTo(rescored.logprobs[i][t], 12)));

    const stored = await session.group('g0');
    expect(stored.sampling).toEqual({ temperature: 0.8, seed: 7, maxNewTokens: 24 });
    expect(stored.promptText).toBe('Sort: b a c');
    expect(stored.feedback).toBeUndefined();
  });

  it('stores the rendered chat prompt for chats, and merges session defaults under each ask', async () => {
    const policy = createToyPolicy();
    const session = createSession({ policy, defaults: { temperature: 0.5, maxNewTokens: 8 } });
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const { groupId } = await session.ask({ messages, n: 2, seed: 1 });
    const group = await session.group(groupId);
    expect(group.messages).toEqual(messages);
    expect(group.promptText).toBe(policy.render({ messages }));
    expect(group.sampling).toEqual({ temperature: 0.5, maxNewTokens: 8, seed: 1 });
    expect(group.completions.every((c) => c.tokenIds.length <= 8)).toBe(true);
  });

  it('keeps a chat prompt text only if it encodes back to the ids the model saw', async () => {
    const toy = createToyPolicy();
    // A decoder that drops the template's markers, as one that always skips special tokens would.
    const lossy = { ...toy, decode: async (ids: number[]) => (await toy.decode!(ids)).replace(/<\|\w+\|>/g, '') };
    const session = createSession({ policy: lossy });
    const { groupId } = await session.ask({ messages: [{ role: 'user', content: 'hi' }], n: 2, maxNewTokens: 4 });
    expect((await session.group(groupId)).promptText).toBeUndefined();
  });

  it('rejects bad asks with typed errors before touching the model', async () => {
    const policy = createToyPolicy();
    const session = createSession({ policy });
    await expect(session.ask({ prompt: 'x', n: 0 })).rejects.toThrow(InvalidInputError);
    await expect(session.ask({ prompt: 'x', n: 1.5 })).rejects.toThrow(/n: must be a positive integer/);
    await expect(session.ask({ prompt: 'x', messages: [{ role: 'user', content: 'y' }], n: 2 })).rejects.toThrow(/exactly one of prompt/);
    await expect(session.ask({ n: 2 } as never)).rejects.toThrow(InvalidInputError);
    await expect(session.ask({ messages: [{ role: 'robot', content: 'y' }] as never, n: 2 })).rejects.toThrow(/messages\[0\]/);
    const { groupId } = await session.ask({ prompt: 'x', n: 2, maxNewTokens: 4 });
    await expect(session.ask({ prompt: 'x', n: 2, groupId })).rejects.toThrow(/already in use/);
    expect(policy.generateCalls).toBe(1);
  });
});

describe('createSession: tell', () => {
  it('computes advantages exactly as computeAdvantages does and stores them', async () => {
    const session = createSession({ policy: createToyPolicy() });
    const { groupId } = await session.ask({ prompt: 'q', n: 4, seed: 3, maxNewTokens: 6 });
    const rewards = [1, 0, 0.25, 0.5];
    const told = await session.tell({ groupId, rewards });
    const expected = computeAdvantages(rewards, { groupSize: 4 });
    expect(told.advantages).toEqual(expected.advantages);
    expect(told.rewards).toEqual(expected.rewards);
    const stored = await session.group(groupId);
    expect(stored.completions.map((c) => c.advantage)).toEqual(expected.advantages);
    expect(stored.completions.map((c) => c.rewards)).toEqual(rewards.map((r) => [r]));
    expect(stored.feedback?.mean).toBe(expected.groupMeans[0]);
    expect(stored.feedback?.std).toBe(expected.groupStds[0]);
  });

  it('passes several reward functions, weights and the estimator through', async () => {
    const advantages = { weights: [2, 0.5], estimator: 'rloo' as const };
    const session = createSession({ policy: createToyPolicy(), advantages });
    const { groupId } = await session.ask({ prompt: 'q', n: 3, maxNewTokens: 4 });
    const rewards = [[1, null], [0, 1], [null, null]];
    const told = await session.tell({ groupId, rewards });
    const expected = computeAdvantages(rewards, { groupSize: 3, ...advantages });
    expect(told.advantages).toEqual(expected.advantages);
    expect(told.rewards).toEqual([expected.rewards[0], expected.rewards[1], null]);
    expect(told.group.feedback?.options).toEqual(advantages);
  });

  it('takes rewards by completion id, keeps earlier ones, and replaces on a second tell', async () => {
    const session = createSession({ policy: createToyPolicy() });
    const { groupId, completions } = await session.ask({ prompt: 'q', n: 3, maxNewTokens: 4 });
    const first = await session.tell({ groupId, rewards: { [completions[0].id]: 1, [completions[2].id]: 0 } });
    expect(first.advantages).toEqual(computeAdvantages([1, null, 0], { groupSize: 3 }).advantages);
    expect(first.group.completions[1].rewards).toBeUndefined();
    expect(first.group.completions[1].reward).toBeNull();

    const second = await session.tell({ groupId, rewards: { [completions[1].id]: 0.5, [completions[2].id]: 0.75 } });
    expect(second.advantages).toEqual(computeAdvantages([1, 0.5, 0.75], { groupSize: 3 }).advantages);
  });

  it('scores completions the model did not write, so their log-probs are known', async () => {
    const policy = createToyPolicy();
    const session = createSession({ policy });
    const { groupId } = await session.ask({ prompt: 'Alphabetise: pear apple', n: 2, temperature: 0.7, maxNewTokens: 8 });
    const text = 'apple, pear';
    const told = await session.tell({ groupId, rewards: [0, 0.2], completions: [{ text, reward: 1 }] });
    const extra = told.group.completions[2];
    expect(extra).toMatchObject({ id: `${groupId}-2`, index: 2, source: 'external', text, reward: 1 });
    expect(extra.finishReason).toBeUndefined();
    const ids = await policy.encode!(text);
    expect(extra.tokenIds).toEqual(ids);
    const scored = await policy.scoreCompletions!({ prompt: 'Alphabetise: pear apple', completions: [ids], temperature: 0.7 });
    expect(extra.logprobs).toEqual(scored.logprobs[0]);
    expect(told.advantages).toEqual(computeAdvantages([0, 0.2, 1], { groupSize: 3 }).advantages);
  });

  it('tells a new group made only of external completions, given as text or token ids', async () => {
    const policy = createToyPolicy();
    const session = createSession({ policy });
    const messages = [{ role: 'user' as const, content: 'Say yes' }];
    const told = await session.tell({
      messages,
      temperature: 0.5,
      completions: [
        { text: 'yes', reward: 1 },
        { tokenIds: await policy.encode!('no'), reward: 0 },
      ],
    });
    expect(told.group.completions.map((c) => c.text)).toEqual(['yes', 'no']);
    const scored = await policy.scoreCompletions!({ messages, completions: [await policy.encode!('yes'), await policy.encode!('no')], temperature: 0.5 });
    expect(told.group.completions.map((c) => c.logprobs)).toEqual(scored.logprobs);
    expect(told.advantages).toEqual(computeAdvantages([1, 0], { groupSize: 2 }).advantages);
    expect((await session.groups({ told: true })).map((g) => g.id)).toEqual([told.groupId]);
  });

  it('refuses bad tells with typed errors and leaves the stored group as it was', async () => {
    const session = createSession({ policy: createToyPolicy() });
    const { groupId, completions } = await session.ask({ prompt: 'q', n: 3, maxNewTokens: 4 });
    await session.tell({ groupId, rewards: [1, 0, 0] });
    const before = await session.group(groupId);

    await expect(session.tell({ groupId: 'nope', rewards: [1, 0] })).rejects.toThrow(NotFoundError);
    await expect(session.tell({ groupId, rewards: [1, 0] })).rejects.toThrow(/has 2 values but group .* has 3/);
    await expect(session.tell({ groupId, rewards: [1, Infinity, 0] })).rejects.toThrow(/rewards\[1\]: must be a finite number/);
    await expect(session.tell({ groupId, rewards: [1, '2', 0] as never })).rejects.toThrow(InvalidInputError);
    await expect(session.tell({ groupId, rewards: [[1, 0], [1], [0, 0]] })).rejects.toThrow(/one value per reward function/);
    await expect(session.tell({ groupId, rewards: { 'other-0': 1 } })).rejects.toThrow(/not a completion of group/);
    await expect(session.tell({ groupId })).rejects.toThrow(/nothing to tell/);
    await expect(session.tell({ groupId, completions: [{ reward: 1 } as never] })).rejects.toThrow(/text or its tokenIds/);
    await expect(session.tell({ prompt: 'x', completions: [] })).rejects.toThrow(/completions/);
    expect(await session.group(groupId)).toEqual(before);
    expect(completions).toHaveLength(3);
  });

  it('explains that a single completion has no relative advantage', async () => {
    const session = createSession({ policy: createToyPolicy() });
    const { groupId } = await session.ask({ prompt: 'q', n: 1, maxNewTokens: 4 });
    await expect(session.tell({ groupId, rewards: [1] })).rejects.toThrow(/at least 2: ask with n >= 2/);
  });
});

describe('createSession: many tasks on one model', () => {
  it('interleaves asks and tells from concurrent tasks without mixing groups', async () => {
    // The toy policy throws if two generations overlap, as an onnxruntime session would.
    const policy = createToyPolicy();
    const session = createSession({ policy });
    const tasks = Array.from({ length: 6 }, (_, task) => `task ${task}: count to ${task + 3}`);
    const results = await Promise.all(
      tasks.map(async (prompt, task) => {
        const rounds = [];
        for (let round = 0; round < 3; round++) {
          const seed = task * 10 + round;
          const asked = await session.ask({ prompt, n: 3, seed, maxNewTokens: 10 });
          const rewards = asked.completions.map((c) => c.text.length % (task + 2));
          const told = await session.tell({ groupId: asked.groupId, rewards });
          rounds.push({ prompt, seed, asked, rewards, told });
        }
        return rounds;
      }),
    );
    const reference = createToyPolicy();
    const ids = new Set<string>();
    for (const { prompt, seed, asked, rewards, told } of results.flat()) {
      ids.add(asked.groupId);
      const expected = await reference.generateGroup({ prompt, groupSize: 3, seed, maxNewTokens: 10 });
      expect(asked.completions.map((c) => c.text)).toEqual(expected.completions.map((c) => c.text));
      expect(told.advantages).toEqual(computeAdvantages(rewards, { groupSize: 3 }).advantages);
      const stored = await session.group(asked.groupId);
      expect(stored.prompt).toBe(prompt);
      expect(stored.completions.map((c) => c.advantage)).toEqual(told.advantages);
    }
    expect(ids.size).toBe(18);
    expect(policy.generateCalls).toBe(18);
  });

  it('serialises concurrent tells of one group so no update is lost', async () => {
    const session = createSession({ policy: createToyPolicy() });
    const { groupId, completions } = await session.ask({ prompt: 'q', n: 4, maxNewTokens: 4 });
    await Promise.all(completions.map((c, i) => session.tell({ groupId, rewards: { [c.id]: i } })));
    const group = await session.group(groupId);
    expect(group.completions.map((c) => c.rewards)).toEqual([[0], [1], [2], [3]]);
    expect(group.completions.map((c) => c.advantage)).toEqual(computeAdvantages([0, 1, 2, 3], { groupSize: 4 }).advantages);
  });
});

describe('task queue', () => {
  it('runs one task at a time in order, drops aborted waiters, and bounds the wait', async () => {
    const queue = createTaskQueue({ maxPending: 2 });
    const order: string[] = [];
    let release!: () => void;
    const first = queue.run(async () => {
      order.push('first');
      await new Promise<void>((r) => (release = r));
    });
    const controller = new AbortController();
    const second = queue.run(async () => order.push('second'), controller.signal);
    const third = queue.run(async () => order.push('third'));
    await expect(queue.run(async () => order.push('fourth'))).rejects.toThrow(BusyError);
    expect(queue.stats).toEqual({ running: 1, pending: 2 });
    controller.abort();
    await expect(second).rejects.toThrow(AbortError);
    expect(queue.stats).toEqual({ running: 1, pending: 1 });
    release();
    await Promise.all([first, third]);
    expect(order).toEqual(['first', 'third']);
    expect(queue.stats).toEqual({ running: 0, pending: 0 });
  });
});

describe('session store seam', () => {
  it('writes every ask and tell through an injected store', async () => {
    const puts: GroupRecord[] = [];
    const memory = new MemorySessionStore();
    const store: SessionStore = {
      put: async (g) => {
        puts.push(structuredClone(g));
        await memory.put(g);
      },
      get: (id) => memory.get(id),
      list: () => memory.list(),
      flush: async () => {
        puts.push({ id: 'flushed' } as GroupRecord);
      },
    };
    const session = createSession({ policy: createToyPolicy(), store });
    const { groupId } = await session.ask({ prompt: 'q', n: 2, maxNewTokens: 4 });
    await session.tell({ groupId, rewards: [1, 0] });
    await session.flush();
    expect(puts.map((g) => [g.id, g.feedback !== undefined])).toEqual([
      [groupId, false],
      [groupId, true],
      ['flushed', false],
    ]);
  });

  it('bounds the memory store by evicting the oldest groups', async () => {
    const store = new MemorySessionStore({ maxGroups: 2 });
    const session = createSession({ policy: createToyPolicy(), store, newId: sequentialIds() });
    for (let i = 0; i < 3; i++) await session.ask({ prompt: `q${i}`, n: 2, maxNewTokens: 2 });
    expect((await session.groups()).map((g) => g.id)).toEqual(['g1', 'g2']);
    await expect(session.group('g0')).rejects.toThrow(NotFoundError);
  });
});
