/**
 * The checks every export style must pass, shared by the export-style tests: generation log-probs
 * equal a transformers.js forward pass, scoreCompletions equals generation, greedy equals
 * transformers.js greedy.
 */
import { AutoModelForCausalLM, Tensor } from '@huggingface/transformers';
import { expect } from 'vitest';
import type { OnnxPolicy } from '../../lib/onnx.js';
import { halfToFloat } from '../../lib/policy/logits.js';
import type { GroupResult } from '../../lib/core/policy.js';

type Reference = Awaited<ReturnType<typeof AutoModelForCausalLM.from_pretrained>>;

export function loadReference(dir: string): Promise<Reference> {
  return AutoModelForCausalLM.from_pretrained(dir);
}

/** log softmax(logits / T) of each completion token, from one transformers.js forward pass over prompt + completion. */
export async function referenceLogprobs(reference: Reference, promptIds: number[], completion: number[], temperature = 1): Promise<number[]> {
  const ids = [...promptIds, ...completion];
  const output = (await reference({
    input_ids: new Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
    attention_mask: new Tensor('int64', new BigInt64Array(ids.length).fill(1n), [1, ids.length]),
  })) as { logits: Tensor };
  const logits = output.logits;
  const vocab = logits.dims[2];
  const raw = logits.data as ArrayLike<number>;
  const data = logits.type === 'float16' ? (raw instanceof Uint16Array ? halfToFloat(raw, 0, raw.length) : Float32Array.from(raw)) : (raw as Float32Array);
  const rows = logits.dims[1];
  return completion.map((target, t) => {
    // The row that predicts completion token t (exports that keep only some logits keep the last ones).
    const row = promptIds.length - 1 + t - (ids.length - rows);
    const z = Array.from(data.subarray(row * vocab, (row + 1) * vocab), (x) => x / temperature);
    const max = Math.max(...z);
    const lse = max + Math.log(z.reduce((s, x) => s + Math.exp(x - max), 0));
    return z[target] - lse;
  });
}

export async function referenceGreedy(reference: Reference, promptIds: number[], maxNewTokens: number): Promise<number[]> {
  const output = (await reference.generate({
    input_ids: new Tensor('int64', BigInt64Array.from(promptIds.map(BigInt)), [1, promptIds.length]),
    attention_mask: new Tensor('int64', new BigInt64Array(promptIds.length).fill(1n), [1, promptIds.length]),
    max_new_tokens: maxNewTokens,
    do_sample: false,
  })) as Tensor;
  return (output.tolist()[0] as bigint[]).slice(promptIds.length).map(Number);
}

/** Every token of `group` scored by scoreCompletions and by a transformers.js forward pass, to `tolerance`. */
export async function expectLogprobsMatch(policy: OnnxPolicy, reference: Reference, prompt: string, group: GroupResult, temperature: number, tolerance: number): Promise<void> {
  const scored = await policy.scoreCompletions({ prompt, completions: group.completions.map((c) => c.tokenIds), temperature });
  for (const [i, c] of group.completions.entries()) {
    const expected = await referenceLogprobs(reference, group.promptTokenIds, c.tokenIds, temperature);
    c.logprobs.forEach((lp, t) => {
      expect(Math.abs(lp - scored.logprobs[i][t]), `scored row ${i} token ${t}`).toBeLessThan(tolerance);
      expect(Math.abs(lp - expected[t]), `transformers.js row ${i} token ${t}`).toBeLessThan(tolerance);
    });
  }
}
