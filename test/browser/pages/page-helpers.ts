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
