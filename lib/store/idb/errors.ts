/** IndexedDB failures as webgrpo's typed store errors. */
import { StoreError, StoreQuotaError, WebgrpoError } from '../../errors.js';

/**
 * Our typed errors pass through; quota failures become `StoreQuotaError`; the rest `StoreError`.
 * `remedy` ends the quota message.
 */
export async function mapErrors<T>(what: string, body: () => Promise<T>, remedy = 'free space (delete old runs) and resume'): Promise<T> {
  try {
    return await body();
  } catch (error) {
    if (isQuotaError(error)) {
      throw new StoreQuotaError(
        `Could not ${what}: the browser's storage quota for this site is used up. Nothing of this write was kept; ${remedy}.`,
        { cause: error },
      );
    }
    if (error instanceof WebgrpoError) throw error;
    throw new StoreError(`Could not ${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

function isQuotaError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const name = (error as { name?: unknown }).name;
  if (name === 'QuotaExceededError') return true;
  // Some engines report the abort with the quota error as its cause.
  const cause = (error as { cause?: unknown }).cause;
  return cause !== undefined && cause !== error && isQuotaError(cause);
}
