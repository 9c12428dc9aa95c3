/**
 * A step's items one at a time, as the gradient and router loops work them (the policy runs one
 * request at a time anyway): an item finished before an interruption is reused from the store,
 * a new one is run and stored as soon as it finishes, so a resume never redoes it.
 */
import { throwIfAborted } from '../errors.js';
import type { ItemResult } from '../store/records.js';
import type { Store } from '../store/types.js';
import type { StepPlan } from './schedule.js';

export async function runBatchItems(
  store: Store,
  runId: string,
  plan: StepPlan,
  signal: AbortSignal,
  run: (position: number, index: number) => Promise<ItemResult>,
  /** Called with every result, in batch order, once it is stored. */
  done: (result: ItemResult, reused: boolean) => Promise<void>,
): Promise<ItemResult[]> {
  const finished = new Map((await store.getItemResults(runId, plan.step)).map((r) => [r.position, r]));
  const results: ItemResult[] = [];
  for (const [position, index] of plan.indices.entries()) {
    const reused = finished.get(position);
    const result = reused ?? (await run(position, index));
    throwIfAborted(signal);
    if (!reused) await store.putItemResult(runId, result);
    results.push(result);
    await done(result, reused !== undefined);
  }
  return results;
}
