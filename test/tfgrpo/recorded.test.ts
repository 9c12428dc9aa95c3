/** Recording and replaying a policy (the scripted model stands in for a real one). */
import { describe, expect, it } from 'vitest';
import { AbortError, InvalidInputError, NotFoundError, recordingPolicy, replayPolicy, type Policy, type TokenEvent } from '../../lib/index.js';
import { scriptedPolicy } from './helpers/scripted-policy.js';

describe('recordingPolicy and replayPolicy', () => {
  it('replay answers recorded requests by content, in any order, with tokens streamed', async () => {
    const inner: Policy = { ...scriptedPolicy(), encode: async (text) => [...text].map((c) => c.charCodeAt(0)) };
    const recorder = recordingPolicy(inner);
    const a = { prompt: 'Put these words in alphabetical order: b, a.', groupSize: 3, maxNewTokens: 8, seed: 1, temperature: 0.7 };
    const b = { ...a, seed: 2 };
    const first = await recorder.generateGroup(a);
    const second = await recorder.generateGroup(b);
    await recorder.encode?.('[G0] x');
    const recording = JSON.parse(JSON.stringify(recorder.recording()));
    expect(recording.calls).toHaveLength(2);

    const replay = replayPolicy(JSON.stringify(recording));
    expect(replay.info).toMatchObject({ model: 'scripted-alphabetise', backend: 'recorded' });
    expect(await replay.generateGroup(b)).toEqual(second);
    const tokens: TokenEvent[] = [];
    // Key order and an extra callback do not change the identity of a request.
    expect(await replay.generateGroup({ seed: 1, temperature: 0.7, maxNewTokens: 8, groupSize: 3, prompt: a.prompt, onToken: (t) => tokens.push(t) })).toEqual(first);
    expect(tokens).toHaveLength(first.completions.reduce((n, c) => n + c.tokenIds.length, 0));
    expect(await replay.encode?.('[G0] x')).toEqual([91, 71, 48, 93, 32, 120]);
    await expect(replay.generateGroup({ ...a, seed: 3 })).rejects.toBeInstanceOf(NotFoundError);
    await expect(replay.encode?.('other')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('does not record aborted groups, and replay honours abort', async () => {
    const recorder = recordingPolicy(scriptedPolicy());
    const controller = new AbortController();
    controller.abort();
    await expect(recorder.generateGroup({ prompt: 'x', groupSize: 2, maxNewTokens: 4, signal: controller.signal })).rejects.toBeDefined();
    expect(recorder.recording().calls).toEqual([]);
    await recorder.generateGroup({ prompt: 'x', groupSize: 2, maxNewTokens: 4 });
    const replay = replayPolicy(recorder.recording(), { delayMs: 1000 });
    const slow = new AbortController();
    const pending = replay.generateGroup({ prompt: 'x', groupSize: 2, maxNewTokens: 4, signal: slow.signal });
    slow.abort();
    await expect(pending).rejects.toBeInstanceOf(AbortError);
  });

  it('rejects documents that are not recordings', () => {
    expect(() => replayPolicy('{')).toThrow(InvalidInputError);
    expect(() => replayPolicy(JSON.stringify({ format: 'other' }))).toThrow(/webgrpo.recording/);
    expect(() => replayPolicy({ format: 'webgrpo.recording', version: 1, policy: { model: 'm', backend: 'b' }, calls: [{}], encodes: [] } as never)).toThrow(/calls\[0\]/);
  });
});
