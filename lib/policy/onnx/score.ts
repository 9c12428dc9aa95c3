/**
 * Log-probs and entropies of given completions: the prompt is prefilled once, its cache gathered
 * into one row per completion, and the completions run as one batch (in windows when the
 * [rows, window, vocab] logits would be too large). Shorter completions are padded at the end with
 * their own last token; a causal decoder never lets a position see later ones, so the padding
 * cannot change any scored position, and no attention mask games are needed.
 *
 * `forEachScoreWindow` is the walk itself: it hands every forward pass's logits (and hidden state)
 * with the rows that predict completion tokens to a visitor. Scoring is one visitor; the gradient
 * trainer's collection of the frozen model's per-token states (lib/grad) is another.
 */
import { AbortError } from '../../errors.js';
import type { ScoreResult, TopLogprob } from '../../core/policy.js';
import { release, type Decoder, type ForwardResult } from './decoder.js';
import type { KvState } from './kv-cache.js';
import type { ScorePick } from './logits-ops.js';

export interface ScoreRequest {
  promptIds: number[];
  completions: number[][];
  temperature: number;
  /** Alternatives per scored token (ScoreResult.topLogprobs); 0 or absent: none. */
  topLogprobs?: number;
  signal?: AbortSignal;
}

/** One forward pass's output and the completion tokens its rows predict. */
export interface ScoreWindow {
  logits: ForwardResult['logits'];
  hidden: ForwardResult['hidden'];
  /** Row offsets into the logits and the token each predicts. */
  picks: ScorePick[];
  /** For each pick: [completion index, token index]. */
  slots: Array<[number, number]>;
}

export async function scoreGroup(decoder: Decoder, vocabSize: number, maxLogits: number, request: ScoreRequest): Promise<ScoreResult> {
  const { completions, temperature } = request;
  const logprobs = completions.map((c) => new Array<number>(c.length));
  const entropies = completions.map((c) => new Array<number>(c.length));
  const k = request.topLogprobs ?? 0;
  const tops = k > 0 ? completions.map((c) => new Array<TopLogprob[]>(c.length)) : undefined;
  await forEachScoreWindow(decoder, vocabSize, maxLogits, request, async (window) => {
    const scores = await decoder.logits.score(window.logits, window.picks, temperature, window.hidden);
    const alternatives = tops ? await decoder.logits.top(window.logits, window.picks.map((p) => p.offset), k, temperature, window.hidden) : undefined;
    window.slots.forEach(([i, t], j) => {
      logprobs[i][t] = scores[j].logprob;
      entropies[i][t] = scores[j].entropy;
      if (tops && alternatives) tops[i][t] = alternatives[j];
    });
  });
  return { logprobs, entropies, ...(tops ? { topLogprobs: tops } : {}) };
}

/** Runs the model over prompt + completions; `visit` sees each window before its tensors are freed. */
export async function forEachScoreWindow(
  decoder: Decoder,
  vocabSize: number,
  maxLogits: number,
  request: ScoreRequest,
  visit: (window: ScoreWindow) => Promise<void>,
): Promise<void> {
  const { promptIds, completions, signal } = request;
  const checkAbort = () => {
    if (signal?.aborted) throw new AbortError('scoreCompletions was aborted.', { cause: signal.reason });
  };

  if (decoder.passMode === 'two-pass') return fromEmptyCache(decoder, vocabSize, maxLogits, request, visit, checkAbort);
  let kv: KvState = decoder.kv.empty(1);
  try {
    // Prompt: its last position predicts every completion's first token.
    const prefillWindow = Math.max(1, Math.floor(maxLogits / vocabSize));
    let last: ForwardResult | undefined;
    for (let start = 0; start < promptIds.length; start += prefillWindow) {
      checkAbort();
      const chunk = promptIds.slice(start, start + prefillWindow);
      release(last);
      last = await decoder.forward(chunk, 1, chunk.length, kv, true);
      decoder.kv.dispose(kv);
      kv = last.kv;
    }
    const promptOffset = (last!.logits.dims[1] - 1) * vocabSize;
    const firsts = completions.flatMap((c, i) => (c.length > 0 ? [i] : []));
    try {
      await visit({
        logits: last!.logits,
        hidden: last!.hidden,
        picks: firsts.map((i) => ({ offset: promptOffset, target: completions[i][0] })),
        slots: firsts.map((i) => [i, 0]),
      });
    } finally {
      release(last);
    }

    // Completions with more than one token: feed tokens 0..n-2, score tokens 1..n-1.
    const rows = completions.flatMap((c, i) => (c.length > 1 ? [i] : []));
    if (rows.length === 0) return;
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
      try {
        await visit({ logits: result.logits, hidden: result.hidden, picks, slots });
      } finally {
        release(result);
      }
    }
  } finally {
    decoder.kv.dispose(kv);
  }
}

/**
 * Scoring on graphs that only run the two passes transformers.js runs ('two-pass', passes.ts):
 * each row is prompt + completion (but its last token) from an empty cache, as many rows per pass
 * as the logits bound allows. Position P - 1 + t predicts completion token t.
 */
async function fromEmptyCache(
  decoder: Decoder,
  vocabSize: number,
  maxLogits: number,
  request: ScoreRequest,
  visit: (window: ScoreWindow) => Promise<void>,
  checkAbort: () => void,
): Promise<void> {
  const { promptIds, completions } = request;
  const rows = completions.flatMap((c, i) => (c.length > 0 ? [i] : []));
  const length = promptIds.length + Math.max(...rows.map((i) => completions[i].length)) - 1;
  const perPass = Math.max(1, Math.floor(maxLogits / (length * vocabSize)));
  for (let start = 0; start < rows.length; start += perPass) {
    checkAbort();
    const batch = rows.slice(start, start + perPass);
    const tokens = new Int32Array(batch.length * length);
    const picks: ScorePick[] = [];
    const slots: Array<[number, number]> = [];
    batch.forEach((i, r) => {
      const sequence = [...promptIds, ...completions[i].slice(0, -1)];
      for (let t = 0; t < length; t++) tokens[r * length + t] = sequence[Math.min(t, sequence.length - 1)];
      completions[i].forEach((target, t) => {
        picks.push({ offset: (r * length + promptIds.length - 1 + t) * vocabSize, target });
        slots.push([i, t]);
      });
    });
    const empty = decoder.kv.empty(batch.length);
    const result = await decoder.forward(tokens, batch.length, length, empty);
    decoder.kv.dispose(empty);
    decoder.kv.dispose(result.kv);
    try {
      await visit({ logits: result.logits, hidden: result.hidden, picks, slots });
    } finally {
      release(result);
    }
  }
}
