/**
 * The text the bundled model reads for a prompt (OnnxPolicy.renderPrompt): chat messages through
 * its chat template, special tokens and the generation prompt included; a plain prompt as typed,
 * with no template and no BOS, as TRL passes a standard (non-conversational) prompt.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { TINY_DIR } from './fixtures.js';

let policy: OnnxPolicy;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: TINY_DIR });
});
afterAll(() => policy?.dispose());

describe('renderPrompt', () => {
  it('shows the chat template and its special tokens for messages, and a plain prompt as it is', async () => {
    const messages = [{ role: 'user' as const, content: 'Sort: pear fig' }];
    expect(await policy.renderPrompt({ messages })).toBe('<s><|im_start|>user\nSort: pear fig<|im_end|>\n<|im_start|>assistant\n');
    expect(await policy.renderPrompt({ prompt: 'Sort: pear fig' })).toBe('Sort: pear fig');
    // The rendered text is the token ids the model samples from, decoded with nothing skipped.
    expect(await policy.renderPrompt({ messages })).toBe(await policy.decode(policy.promptIds({ messages }), { skipSpecialTokens: false }));
  });

  it('refuses what sampling refuses, with the same typed error', async () => {
    await expect(policy.renderPrompt({ messages: [] })).rejects.toMatchObject({ code: 'InvalidInput', argument: 'messages' });
  });
});
