/** Timing helpers shared by the bench suites. */
import { performance } from 'node:perf_hooks';

export interface Timing {
  /** Median wall time of one call, in milliseconds. */
  medianMs: number;
  runs: number;
}

/**
 * Calls `fn` a few times to warm the JIT, then repeatedly until `minTimeMs` has passed (and at
 * least `minRuns` times), and returns the median call time: robust to the odd GC pause or a
 * neighbour stealing the core.
 */
export function measure(fn: () => unknown, { minTimeMs = 1500, minRuns = 5, warmup = 3 } = {}): Timing {
  for (let i = 0; i < warmup; i++) fn();
  const times: number[] = [];
  const start = performance.now();
  while (times.length < minRuns || performance.now() - start < minTimeMs) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { medianMs: times[Math.floor(times.length / 2)], runs: times.length };
}

/** 12345678 → "12.3M". */
export function si(value: number): string {
  if (value >= 1e9) return `${(value / 1e9).toFixed(2)}G`;
  if (value >= 1e6) return `${(value / 1e6).toFixed(1)}M`;
  if (value >= 1e3) return `${(value / 1e3).toFixed(1)}k`;
  return value.toFixed(1);
}

export function ms(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

/** Wall and CPU time (user + system of every thread of the process) of one call. */
export interface Cost {
  ms: number;
  cpuMs: number;
}

/** The median of `repeats` calls, wall and CPU time apart. */
export async function measureCpu(fn: () => Promise<unknown>, repeats: number): Promise<Cost> {
  const runs: Cost[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await fn();
    const c = process.cpuUsage(c0);
    runs.push({ ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 });
  }
  // The median: on a shared machine single runs swing with the neighbours.
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { ms: median(runs.map((r) => r.ms)), cpuMs: median(runs.map((r) => r.cpuMs)) };
}
