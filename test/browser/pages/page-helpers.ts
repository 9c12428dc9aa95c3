/**
 * What the browser test pages (test/browser/pages/*.html) share: each page's `window` API returns
 * an Outcome instead of throwing, because an exception thrown inside `page.evaluate` reaches the
 * test without its name, code or stack; and the error measures the pages compare two engines with.
 */

/** An error as plain data that survives the structured clone back to the test. */
export interface PlainError {
  name: string;
  code?: string;
  message: string;
  stack?: string;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: PlainError };

function plain(error: unknown): PlainError {
  const e = error as PlainError;
  return { name: e.name, code: e.code, message: e.message, stack: e.stack };
}

/** Runs `fn`, returning its value or the error it threw, as plain data. */
export async function call<T>(fn: () => T | Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    return { ok: false, error: plain(error) };
  }
}

type Numbers = ArrayLike<number>;

/** max |x - y| over max |y|: the error relative to the tensor's own size (the absolute error where y is all zero). */
export function relative(x: Numbers, y: Numbers): number {
  let diff = 0;
  let size = 0;
  for (let i = 0; i < y.length; i++) {
    diff = Math.max(diff, Math.abs(x[i] - y[i]));
    size = Math.max(size, Math.abs(y[i]));
  }
  return size === 0 ? diff : diff / size;
}

/** max |x - y|; NaN when the lengths differ (an index missing on one side), so no tolerance passes. */
export function maxAbs(x: Numbers, y: Numbers): number {
  let worst = 0;
  for (let i = 0; i < Math.max(x.length, y.length); i++) worst = Math.max(worst, Math.abs(x[i] - y[i]));
  return worst;
}

interface Sampling {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
}
type Draw = (values: Numbers, offset: number, vocab: number, config: Sampling, u: number, scratch?: Float64Array, mask?: Uint32Array) => { tokenId: number };

/**
 * What the reference sampler (`sampleToken`, passed in) draws for one pick under computations a
 * rounding away from it: u, the temperature, top-p and min-p a relative `delta` either side; for
 * greedy, every allowed token within `delta` of the largest logit, any of which an engine in
 * float32 or float16 may find first. One token: the draw does not hinge on rounding, and every
 * engine must make it (test/browser/near-ties.ts, drawAgreement).
 */
export function nearbyDraws(draw: Draw, values: Numbers, offset: number, vocab: number, config: Sampling, u: number, mask?: Uint32Array, delta = 1e-4): number[] {
  const allowed = (i: number) => !mask || ((mask[i >>> 5] >>> (i & 31)) & 1) === 1;
  const out = new Set<number>();
  if (config.temperature === 0) {
    let max = -Infinity;
    for (let i = 0; i < vocab; i++) if (allowed(i)) max = Math.max(max, values[offset + i]);
    for (let i = 0; i < vocab; i++) if (allowed(i) && values[offset + i] >= max - delta * Math.max(1, Math.abs(max))) out.add(i);
    return [...out];
  }
  for (const du of [-delta, 0, delta]) {
    for (const scale of [1 - delta, 1, 1 + delta]) {
      const nearby = { ...config, temperature: config.temperature * scale, topP: Math.min(1, config.topP * (config.topP < 1 ? scale : 1)), minP: config.minP * scale };
      out.add(draw(values, offset, vocab, nearby, Math.min(Math.max(u + du, 0), 1 - 1e-12), undefined, mask).tokenId);
    }
  }
  return [...out];
}
