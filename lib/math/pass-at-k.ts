/**
 * pass@k, the unbiased estimator of Chen et al. (2021, "Evaluating Large Language Models Trained on
 * Code"): from n samples of which c are correct, the chance that at least one of k samples drawn
 * without replacement is correct, 1 - C(n-c, k) / C(n, k). Computed as the product
 * 1 - prod_{i=n-c+1..n} (1 - k/i), which never forms the binomials (they overflow for large n).
 */
import { InvalidInputError } from '../errors.js';

/** pass@k from n samples of which c are correct (Chen et al., 2021), for 1 <= k <= n. */
export function passAtK(n: number, c: number, k: number): number {
  if (!Number.isInteger(n) || n < 1) throw new InvalidInputError('n', `expected an integer >= 1 (samples), got ${n}.`);
  if (!Number.isInteger(c) || c < 0 || c > n) throw new InvalidInputError('c', `expected an integer from 0 to n = ${n} (correct samples), got ${c}.`);
  if (!Number.isInteger(k) || k < 1 || k > n) throw new InvalidInputError('k', `expected an integer from 1 to n = ${n}, got ${k}.`);
  // Fewer wrong samples than k: every draw of k holds a correct one.
  if (n - c < k) return 1;
  let miss = 1;
  for (let i = n - c + 1; i <= n; i++) miss *= 1 - k / i;
  return 1 - miss;
}
