/**
 * One measured group, two ways, the same in Node and in the browser (the bench page imports this
 * file too):
 *
 * - webgrpo: `generateGroup` (prompt prefilled once, G rows decoded together, log-probs returned);
 * - transformers.js: `generate()` on G copies of the prompt, then a forward pass over the
 *   generated sequences to get the log-probs, as one has to today.
 *
 * Throughput counts useful tokens only: each row's tokens up to and including its end token (the
 * bench model declares no end token, so there every row runs to the token limit on both sides).
 */
import { random, type PreTrainedModel, type Tensor as TensorType } from '@huggingface/transformers';
import { tokenLogProbs } from '../../lib/math/logprobs.js';
import type { OnnxPolicy } from '../../lib/onnx.js';

export interface BenchCase {
  groupSize: number;
  newTokens: number;
  seed: number;
}

export interface Measurement {
  implementation: 'webgrpo' | 'transformers.js';
  groupSize: number;
  /** Time to the first sampled token: the prompt's prefill (once, or once per row). */
  prefillMs: number;
  totalMs: number;
  tokens: number;
  tokensPerSecond: number;
  /** Mean log-prob of the sampled tokens (both sides have them; a sanity check, not a speed). */
  meanLogprob: number;
  /** Node only: the process's CPU time over the measurement (user + system of every thread). */
  cpuMs?: number;
}

const END_TOKENS = [2, 5];

/** A `length`-token prompt for the character-level bench tokenizer. */
export function benchPrompt(length: number): string {
  const text = 'Group Relative Policy Optimization samples a group of completions per prompt and scores them. ';
  return text.repeat(Math.ceil(length / text.length)).slice(0, length);
}

export async function measureWebgrpo(policy: OnnxPolicy, prompt: string, c: BenchCase): Promise<Measurement> {
  const start = performance.now();
  let first = 0;
  const group = await policy.generateGroup({
    prompt,
    groupSize: c.groupSize,
    maxNewTokens: c.newTokens,
    seed: c.seed,
    onToken: () => {
      first ||= performance.now();
    },
  });
  const totalMs = performance.now() - start;
  const logprobs = group.completions.flatMap((x) => x.logprobs);
  return result('webgrpo', c, first - start, totalMs, logprobs);
}

export async function measureTransformers(
  model: PreTrainedModel,
  Tensor: typeof TensorType,
  promptIds: number[],
  c: BenchCase,
): Promise<Measurement> {
  const G = c.groupSize;
  const P = promptIds.length;
  const start = performance.now();
  let puts = 0;
  let first = 0;
  random.seed(c.seed); // transformers.js samples with its own (Mersenne Twister) generator
  const ids = new BigInt64Array(G * P);
  for (let r = 0; r < G; r++) for (let t = 0; t < P; t++) ids[r * P + t] = BigInt(promptIds[t]);
  const output = (await model.generate({
    input_ids: new Tensor('int64', ids, [G, P]),
    attention_mask: new Tensor('int64', new BigInt64Array(G * P).fill(1n), [G, P]),
    max_new_tokens: c.newTokens,
    do_sample: true,
    top_k: 0,
    // The first put() is the prompt, the second the first sampled token.
    streamer: { put: () => void (++puts === 2 && (first = performance.now())), end: () => undefined },
  } as never)) as TensorType;

  // The scoring pass: one forward over prompt + completion, log-softmax at the sampled tokens.
  const [, L] = output.dims;
  const generated = output.data as BigInt64Array;
  const forward = (await model({
    input_ids: output,
    attention_mask: new Tensor('int64', new BigInt64Array(G * L).fill(1n), [G, L]),
  })) as { logits: TensorType };
  const logits = forward.logits.data as Float32Array;
  const V = forward.logits.dims[2];
  const logprobs: number[] = [];
  for (let r = 0; r < G; r++) {
    const row = Array.from(generated.subarray(r * L + P, (r + 1) * L), Number);
    const end = row.findIndex((id) => END_TOKENS.includes(id));
    const useful = end >= 0 ? end + 1 : row.length; // transformers.js keeps sampling after a row ends
    const scored = tokenLogProbs({
      logits: logits.subarray((r * L + P - 1) * V, (r * L + P - 1 + useful) * V),
      dims: [1, useful, V],
      ids: row.slice(0, useful),
    });
    logprobs.push(...scored.logps);
  }
  const totalMs = performance.now() - start;
  return result('transformers.js', c, first - start, totalMs, logprobs);
}

function result(implementation: Measurement['implementation'], c: BenchCase, prefillMs: number, totalMs: number, logprobs: number[]): Measurement {
  return {
    implementation,
    groupSize: c.groupSize,
    prefillMs,
    totalMs,
    tokens: logprobs.length,
    tokensPerSecond: (logprobs.length / totalMs) * 1000,
    meanLogprob: logprobs.reduce((s, x) => s + x, 0) / logprobs.length,
  };
}
