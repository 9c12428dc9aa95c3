/**
 * The sampler's onnxruntime session options: in Node its intra-op threads block instead of
 * spinning unless the user says otherwise (either form of onnxruntime's `extra` entries), the
 * user's options reach the session transformers.js makes, and the hidden-state rebuild is made
 * with the same options.
 */
import { describe, expect, it } from 'vitest';
import { ModelLoadError } from '../../lib/errors.js';
import { bundledModelPath, loadOnnxPolicy } from '../../lib/onnx.js';
import { optionsOf, samplerSessionOptions } from '../../lib/policy/onnx/session-options.js';

const SPIN = 'session.intra_op.allow_spinning';
const sessionOf = (policy: unknown) => (policy as { parts: { decoder: { current: object } } }).parts.decoder.current;

describe('samplerSessionOptions', () => {
  it('blocks in Node, leaves pages to onnxruntime-web, and lets the user choose in either form', () => {
    expect(samplerSessionOptions(true)).toEqual({ extra: { [SPIN]: '0' } });
    expect(samplerSessionOptions(false, { graphOptimizationLevel: 'basic' })).toEqual({ graphOptimizationLevel: 'basic' });
    expect(samplerSessionOptions(true, { intraOpNumThreads: 1, extra: { other: '2' } })).toEqual({ intraOpNumThreads: 1, extra: { [SPIN]: '0', other: '2' } });
    expect(samplerSessionOptions(true, { extra: { [SPIN]: '1' } })).toEqual({ extra: { [SPIN]: '1' } });
    const nested = { extra: { session: { intra_op: { allow_spinning: '1' } } } };
    expect(samplerSessionOptions(true, nested)).toEqual(nested);
  });
});

describe('the sampler session in Node', () => {
  it('is made with the blocking default, and the hidden-state rebuild with the same', async () => {
    const model = await bundledModelPath();
    for (const hiddenState of [false, true]) {
      const policy = await loadOnnxPolicy({ model, hiddenState });
      try {
        expect(optionsOf(sessionOf(policy))).toEqual({ extra: { [SPIN]: '0' } });
        const group = await policy.generateGroup({ prompt: 'abc', groupSize: 2, maxNewTokens: 3, seed: 1 });
        expect(group.completions).toHaveLength(2);
      } finally {
        await policy.dispose();
      }
    }
  });

  it('samples the same tokens and log-probs, bit for bit, blocking or spinning', async () => {
    const model = await bundledModelPath();
    const groups = [];
    for (const sessionOptions of [undefined, { extra: { [SPIN]: '1' } }]) {
      const policy = await loadOnnxPolicy({ model, ...(sessionOptions ? { sessionOptions } : {}) });
      try {
        expect(optionsOf(sessionOf(policy))).toEqual({ extra: { [SPIN]: sessionOptions ? '1' : '0' } });
        groups.push(await policy.generateGroup({ prompt: 'The quick brown fox', groupSize: 4, maxNewTokens: 12, seed: 7 }));
      } finally {
        await policy.dispose();
      }
    }
    const [blocking, spinning] = groups.map((g) => g.completions.map((c) => ({ tokenIds: c.tokenIds, logprobs: c.logprobs })));
    expect(blocking).toEqual(spinning);
    expect(blocking.flatMap((c) => c.tokenIds).length).toBeGreaterThan(4);
  });

  it("passes the user's options to onnxruntime", async () => {
    // An execution provider onnxruntime-node does not have: the load fails only if the option reached it.
    await expect(loadOnnxPolicy({ model: await bundledModelPath(), sessionOptions: { executionProviders: ['no-such-provider'] } })).rejects.toThrow(ModelLoadError);
  });
});
