/**
 * Log-probs and entropies of given completions: the prompt is prefilled once, its cache gathered
 * into one row per completion, and the completions run as one batch (in windows when the
 * [rows, window, vocab] logits would be too large). Shorter completions are padded at the end with
 * their own last token; a causal decoder never lets a position see later ones, so the padding
 * cannot change any scored position, and no attention mask games are needed.
 */
import { AbortError } from '../../errors.js';
import type { ScoreResult } from '../types.js';
import type { Decoder } from './decoder.js';
import type { KvState } from './kv-cache.js';
import type { ScorePick } from './logits-ops.js';

export interface ScoreRequest {
  promptIds: number[];
  completions: number[][];
  temperature: number;
  signal?: AbortSignal;
}

export async function scoreGroup(decoder: Decoder, vocabSize: number, maxLogits: number, request: ScoreRequest): Promise<ScoreResult> {
  const { promptIds, completions, temperature, signal } = request;
  const logprobs = completions.map((c) => new Array<number>(c.length));
  const entropies = completions.map((c) => new Array<number>(c.length));
  const checkAbort = () => {
    if (signal?.aborted) throw new AbortError('scoreCompletions was aborted.', { cause: signal.reason });
  };

  let kv: KvState = decoder.kv.empty(1);
  try {
    // Prompt: its last position predicts every completion's first token.
    const prefillWindow = Math.max(1, Math.floor(maxLogits / vocabSize));
    let lastLogits: Awaited<ReturnType<Decoder['forward']>>['logits'] | undefined;
    for (let start = 0; start < promptIds.length; start += prefillWindow) {
      checkAbort();
      const chunk = promptIds.slice(start, start + prefillWindow);
      lastLogits?.dispose();
      const result = await decoder.forward(chunk, 1, chunk.length, kv, true);
      decoder.kv.dispose(kv);
      kv = result.kv;
      lastLogits = result.logits;
    }
    const promptOffset = (lastLogits!.dims[1] - 1) * vocabSize;
    const firsts = completions.flatMap((c, i) => (c.length > 0 ? [i] : []));
    const firstScores = await decoder.logits.score(lastLogits!, firsts.map((i) => ({ offset: promptOffset, target: completions[i][0] })), temperature);
    lastLogits!.dispose();
    firsts.forEach((i, k) => {
      logprobs[i][0] = firstScores[k].logprob;
      entropies[i][0] = firstScores[k].entropy;
    });

    // Completions with more than one token: feed tokens 0..n-2, score tokens 1..n-1.
    const rows = completions.flatMap((c, i) => (c.length > 1 ? [i] : []));
    if (rows.length === 0) return { logprobs, entropies };
    const gathered = decoder.kv.gather(kv, rows.map(() => 0));
    decoder.kv.dispose(kv);
    kv = gathered;
    const inputLength = Math.max(...rows.map((i) => completions[i].length)) - 1;
    const window = Math.max(1, Math.floor(maxLogits / (rows.length * vocabSize)));
    for (let start = 0; start < inputLength; start += window) {
      checkAbort();
      const width = Math.min(window, inputLength - start);
      const tokens = new Int32Array(rows.length * width);
      const picks: ScorePick[] = [];
      const slots: Array<[number, number]> = [];
      rows.forEach((i, r) => {
        const c = completions[i];
        for (let t = 0; t < width; t++) {
          const position = start + t; // input token index; it predicts token position + 1
          tokens[r * width + t] = c[Math.min(position, c.length - 1)];
          if (position + 1 < c.length) {
            picks.push({ offset: (r * width + t) * vocabSize, target: c[position + 1] });
            slots.push([i, position + 1]);
          }
        }
      });
      const result = await decoder.forward(tokens, rows.length, width, kv);
      decoder.kv.dispose(kv);
      kv = result.kv;
      const scores = await decoder.logits.score(result.logits, picks, temperature);
      result.logits.dispose();
      slots.forEach(([i, t], k) => {
        logprobs[i][t] = scores[k].logprob;
        entropies[i][t] = scores[k].entropy;
      });
    }
    return { logprobs, entropies };
  } finally {
    decoder.kv.dispose(kv);
  }
}
