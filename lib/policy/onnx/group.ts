/**
 * Shared-prefix group sampling: the prompt is prefilled once for one row, its cache is gathered
 * into one row per running completion, and all rows decode together, one forward pass per step.
 * Rows that end leave the batch (their cache rows are dropped), so later steps only pay for rows
 * still running. Each row draws from its own seeded stream: the same seed, model and backend give
 * the same group.
 */
import { mulberry32 } from '../../math/random.js';
import type { SamplingConfig } from '../sampling.js';
import type { GroupResult, TokenEvent } from '../types.js';
import { release, type Decoder, type ForwardResult } from './decoder.js';
import type { KvState } from './kv-cache.js';
import { RowDecoder, type StopRules } from './stopping.js';

export interface GroupRequest extends StopRules {
  promptIds: number[];
  groupSize: number;
  sampling: SamplingConfig;
  seed: number;
  signal?: AbortSignal;
  onToken?: (event: TokenEvent) => void;
}

export async function sampleGroup(decoder: Decoder, vocabSize: number, prefillWindow: number, request: GroupRequest): Promise<GroupResult> {
  const { promptIds, signal } = request;
  // Row r's stream is seeded by the r-th draw from the group seed, so it does not depend on G.
  const seeds = mulberry32(request.seed);
  const rows = Array.from({ length: request.groupSize }, (_, i) => new RowDecoder(i, mulberry32(Math.floor(seeds() * 2 ** 32)), request));
  const k = request.topLogprobs ?? 0;
  const draw = async (result: ForwardResult, targets: RowDecoder[], offsets: number[]) => {
    const picks = targets.map((row, i) => ({ offset: offsets[i], u: row.rng() }));
    const tokens = await decoder.logits.sample(result.logits, picks, request.sampling, result.hidden);
    const tops = k > 0 ? await decoder.logits.top(result.logits, offsets, k, request.sampling.temperature, result.hidden) : undefined;
    targets.forEach((row, i) => {
      row.push(tokens[i], tops?.[i]);
      request.onToken?.({ row: row.row, tokenId: tokens[i].tokenId, logprob: tokens[i].logprob, ...(tops ? { topLogprobs: tops[i] } : {}) });
    });
  };

  let kv: KvState = decoder.kv.empty(1);
  try {
    // Prefill once, in windows so the [1, window, vocab] logits stay bounded for long prompts.
    let last: Awaited<ReturnType<Decoder['forward']>> | undefined;
    for (let start = 0; start < promptIds.length && !signal?.aborted; start += prefillWindow) {
      const chunk = promptIds.slice(start, start + prefillWindow);
      release(last);
      last = await decoder.forward(chunk, 1, chunk.length, kv, true);
      decoder.kv.dispose(kv);
      kv = last.kv;
    }
    if (last && !signal?.aborted) {
      const offset = (last.logits.dims[1] - 1) * vocabSize;
      await draw(last, rows, rows.map(() => offset));
    }
    release(last);

    let running = rows.filter((row) => row.running);
    kv = replace(decoder, kv, running.map(() => 0)); // one cache row per running completion
    while (running.length > 0 && !signal?.aborted) {
      const step = await decoder.forward(running.map((row) => row.lastToken), running.length, 1, kv);
      decoder.kv.dispose(kv);
      kv = step.kv;
      try {
        await draw(step, running, running.map((_, i) => i * vocabSize));
      } finally {
        release(step);
      }

      const keep = running.flatMap((row, i) => (row.running ? [i] : []));
      if (keep.length < running.length) {
        if (keep.length > 0) kv = replace(decoder, kv, keep);
        running = keep.map((i) => running[i]);
      }
    }
    for (const row of rows) row.abort(); // only rows still running when the signal fired
  } finally {
    decoder.kv.dispose(kv);
  }

  const completions = rows.map((row) => row.completion());
  return {
    promptTokenIds: promptIds,
    completions,
    usage: {
      promptTokens: promptIds.length,
      completionTokens: completions.reduce((sum, c) => sum + c.tokenIds.length, 0),
    },
  };
}

function replace(decoder: Decoder, kv: KvState, rows: number[]): KvState {
  if (rows.length === 0 || (rows.length === kv.rows && rows.every((row, i) => row === i))) return kv;
  const gathered = decoder.kv.gather(kv, rows);
  decoder.kv.dispose(kv);
  return gathered;
}
