/**
 * Collecting JavaScript's garbage now, where the runtime lets a program ask (Node), for a LoRA run
 * taking turns under a tight memoryBudget: the engine's weights, released for the sampler's turn,
 * are JavaScript arrays that V8 frees when it next collects, and at SmolLM2-135M's shape it had
 * not yet collected one or two reads of them (538 MB each) when the sampler's session was built
 * again beside them (BENCHMARKS, scale). Node exposes `gc` only under --expose-gc; without it the
 * flag is set for the moment it takes to fetch the function from a fresh context and set back, as
 * jest's leak detector does. Browsers offer no such call: there it answers false and does nothing.
 */
import { isNodeRuntime } from './runtime.js';

/** Node's built-ins by name, kept out of browser bundles (which never take this branch). */
const V8 = 'node:v8';
const VM = 'node:vm';

let collector: Promise<(() => void) | undefined> | undefined;

async function gcFunction(): Promise<(() => void) | undefined> {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') return exposed as () => void;
  if (!isNodeRuntime()) return undefined;
  const v8 = (await import(/* @vite-ignore */ V8)) as { setFlagsFromString(flags: string): void };
  const vm = (await import(/* @vite-ignore */ VM)) as { runInNewContext(code: string): unknown };
  v8.setFlagsFromString('--expose-gc');
  try {
    const gc = vm.runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
}

/** Whether this runtime can collect on request (Node). */
export function canCollectGarbage(): boolean {
  return typeof (globalThis as { gc?: unknown }).gc === 'function' || isNodeRuntime();
}

/**
 * Collects garbage and waits until the arrays it found are freed (V8 frees their memory after the
 * collection, not within it). False where the runtime cannot be asked.
 */
export async function collectGarbage(): Promise<boolean> {
  const gc = await (collector ??= gcFunction());
  if (!gc) return false;
  // A WeakRef keeps its target until the task that made or read it ends (the model's files are
  // held that way, model-graph.ts): collecting in a later task, those are garbage too.
  await new Promise((resolve) => setTimeout(resolve, 0));
  // The second collection waits for the first's arrays to be swept (V8 frees them on a thread of
  // its own, after the collection that found them), so they are given back once it returns.
  gc();
  gc();
  await new Promise((resolve) => setTimeout(resolve, 0));
  return true;
}
