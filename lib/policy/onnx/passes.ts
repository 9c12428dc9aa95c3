/**
 * Which forward passes a decoder graph supports. transformers.js only ever runs two: a prefill from
 * an empty cache, and one new token on top of a cache. webgrpo also runs a third, several new tokens
 * on top of a cache (windowed prefill of long prompts, scoring completions on a prefilled prompt's
 * cache), and some exports do not support it: onnxruntime-genai's, whose causal mask is a square
 * triangle built from `input_ids`, fail with "invalid expand shape", and a graph could as well run
 * it and compute something else. So the load runs all three on three tokens (in two rows) and
 * compares the last position's logits:
 *
 *   'incremental'  [a] then [b, c] on its cache equals [a, b, c] from empty: every pass is used.
 *   'two-pass'     it fails or differs, but [a, b] then [c] equals [a, b, c]: prompts prefill in one
 *                  pass and completions are scored from an empty cache over prompt + completion.
 *
 * A graph that passes neither check cannot be trusted with any numbers and is refused.
 */
import { ModelLoadError } from '../../errors.js';
import { halfToFloat } from '../logits.js';
import type { Decoder, PassMode } from './decoder.js';
import type { KvState } from './kv-cache.js';
import type { OrtTensor } from './ort-types.js';

/**
 * 'padded': rows of different lengths decode together (right-aligned, leading padding masked);
 * 'equal-length': the graph computes other numbers for padded rows (some attention kernels, like
 * com.microsoft GroupQueryAttention, read `seqlens_k` as right padding), so only rows of equal
 * length share a batch.
 */
export type BatchMode = 'padded' | 'equal-length';

/** Logits of two ways to reach the same position agree to this, relative to their largest magnitude. */
const TOLERANCE = 1e-2;

export async function probePasses(decoder: Decoder, label: string, tryFailing = true): Promise<PassMode> {
  const tokens = [0, 1, 2];
  // Two rows, as scoring runs several completions at once (some kernels take several tokens on a
  // cache only for one row).
  const rows = 2;
  // `quiet`: a run expected to fail on some graphs must not log onnxruntime's error.
  const run = async (chunks: number[][], quiet = false): Promise<Float32Array> => {
    let kv = decoder.kv.empty(rows);
    try {
      let last: Float32Array | undefined;
      for (const chunk of chunks) {
        const result = await decoder.forward([...chunk, ...chunk], rows, chunk.length, kv, true, quiet);
        decoder.kv.dispose(kv);
        kv = result.kv;
        try {
          last = await lastRow(result.logits);
        } finally {
          result.logits.dispose();
          result.hidden?.dispose();
        }
      }
      return last!;
    } finally {
      decoder.kv.dispose(kv);
    }
  };
  let full: Float32Array;
  try {
    full = await run([tokens]);
  } catch (cause) {
    throw refuse(decoder, label, `a prefill of ${tokens.length} tokens failed (${message(cause)})`, cause);
  }
  let stepped: Float32Array;
  try {
    stepped = await run([tokens.slice(0, 2), tokens.slice(2)]);
  } catch (cause) {
    throw refuse(decoder, label, `one token on top of a cache failed (${message(cause)})`, cause);
  }
  if (!agree(full, stepped)) throw refuse(decoder, label, 'one token on top of a cache computes other logits than the same tokens prefilled');
  if (!tryFailing) return guessFromInputs(decoder) ? 'incremental' : 'two-pass';
  try {
    if (agree(full, await run([tokens.slice(0, 1), tokens.slice(1)], true))) return 'incremental';
  } catch {
    // Several new tokens on a cache are not supported.
  }
  return 'two-pass';
}

/**
 * Where a failing run cannot be tried (onnxruntime-web's WebGPU backend keeps failing every later
 * run with the error of a failed one), the graph's inputs decide: Optimum's exports take
 * `position_ids` and run any pass; onnxruntime-genai's compute positions from the mask, and their
 * attention takes several tokens on a cache for one row only and reads the mask as right padding.
 */
export function guessFromInputs(decoder: Decoder): boolean {
  return decoder.inputNames.includes('position_ids');
}

/**
 * Whether padded rows compute what they compute alone: [0, 1, 2] and [5] prefilled apart, their
 * caches merged (the short row padded), one more token on both, against that token on each alone.
 */
export async function probePadding(decoder: Decoder, tryFailing = true): Promise<BatchMode> {
  if (!tryFailing && !guessFromInputs(decoder)) return 'equal-length';
  const disposeAll = (...states: KvState[]) => states.forEach((kv) => decoder.kv.dispose(kv));
  const prefill = async (tokens: number[]): Promise<KvState> => {
    const empty = decoder.kv.empty(1);
    const result = await decoder.forward(tokens, 1, tokens.length, empty, true);
    decoder.kv.dispose(empty);
    result.logits.dispose();
    result.hidden?.dispose();
    return result.kv;
  };
  const next = async (kv: KvState, quiet = false): Promise<[Float32Array, KvState]> => {
    const result = await decoder.forward(Array(kv.rows).fill(3), kv.rows, 1, kv, false, quiet);
    try {
      return [await rowsOf(result.logits), result.kv];
    } finally {
      result.logits.dispose();
      result.hidden?.dispose();
    }
  };
  const [long, short] = [await prefill([0, 1, 2]), await prefill([5])];
  const merged = decoder.kv.merge([long, short]);
  try {
    const [[alone0, kv0], [alone1, kv1]] = [await next(long), await next(short)];
    disposeAll(kv0, kv1);
    let together: Float32Array;
    try {
      let kv: KvState;
      [together, kv] = await next(merged, true);
      disposeAll(kv);
    } catch {
      return 'equal-length';
    }
    const vocab = alone0.length;
    return agree(together.subarray(0, vocab), alone0) && agree(together.subarray(vocab), alone1) ? 'padded' : 'equal-length';
  } finally {
    disposeAll(long, short, merged);
  }
}

async function rowsOf(logits: OrtTensor): Promise<Float32Array> {
  const data = logits.location === 'cpu' || logits.location === 'cpu-pinned' ? logits.data : await logits.getData!();
  if (logits.type === 'float16') return halfToFloat(new Uint16Array(data.buffer, data.byteOffset, data.length), 0, data.length);
  return Float32Array.from(data as Float32Array);
}

async function lastRow(logits: OrtTensor): Promise<Float32Array> {
  const all = await rowsOf(logits);
  const vocab = logits.dims[logits.dims.length - 1];
  return all.subarray(all.length - vocab);
}

function agree(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  let scale = 1;
  let diff = 0;
  for (let i = 0; i < a.length; i++) {
    scale = Math.max(scale, Math.abs(a[i]));
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
  }
  return diff <= TOLERANCE * scale;
}

function refuse(decoder: Decoder, label: string, what: string, cause?: unknown): ModelLoadError {
  return new ModelLoadError(
    `${label} cannot be decoded: ${what}. webgrpo feeds the graph's inputs ${decoder.inputNames.join(', ')} ` +
      'as transformers.js does; export the model with past key values (Optimum text-generation-with-past or onnxruntime-genai).',
    cause === undefined ? undefined : { cause },
  );
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
