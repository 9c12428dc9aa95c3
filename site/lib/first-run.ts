/**
 * What the first run (INITIAL_SETUP: LoRA on webgrpo-sorter at sort-words) was measured to change, in the one
 * sentence the first screen shows: Start pressed with no setting changed in headless Chromium on 2
 * shared cores (test/site/first-run.test.ts), the run's 32 held-out problems, greedy and at
 * temperature 1. BENCHMARKS "teach" records the run and the Node runs under other seeds;
 * test/site/method-texts.test.ts checks these numbers against it. Pure.
 */

/** Held-out exact match before and after, in percent, and one greedy mistake the run mends (the same run). */
export const FIRST_RUN_MEASURED = {
  greedy: [25, 81],
  t1: [33, 70],
  mended: { prompt: 'sort: toy net cat', before: 'toy net cat', after: 'cat net toy' },
} as const;

/** The sentence: what the model learns, and the held-out numbers that show it. */
export function firstRunChange(m: typeof FIRST_RUN_MEASURED = FIRST_RUN_MEASURED): string {
  return `It learns to sort the words instead of copying them in the order given (“${m.mended.before}” becomes “${m.mended.after}”): measured in headless Chromium, held-out exact match went from ${m.greedy[0]}% to ${m.greedy[1]}% greedy and from ${m.t1[0]}% to ${m.t1[1]}% at temperature 1.`;
}
