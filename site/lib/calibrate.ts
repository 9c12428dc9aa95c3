/**
 * Auto's choice between a hardware WebGPU adapter and WebAssembly, by measurement: the model is
 * loaded on both, each writes the same short greedy group after a warm-up, and the faster one is
 * kept (the other is disposed). A model of a few million parameters often decodes faster on
 * WebAssembly than on a GPU, whose per-step dispatch cost dominates; a large one rarely does.
 * Results are cached per model and adapter, so the measurement runs once.
 */
import type { Policy } from '../../lib/index.js';

export type CalibratedBackend = 'webgpu' | 'wasm';

export interface Calibration {
  model: string;
  adapter: string;
  choice: CalibratedBackend;
  /** Milliseconds per generated token (a decode step of one row), measured on each backend. */
  msPerToken: Record<CalibratedBackend, number>;
  measuredAt: string;
}

export interface CalibrationCache {
  getCalibration(model: string, adapter: string): Promise<Calibration | undefined>;
  putCalibration(calibration: Calibration): Promise<void>;
}

/** The same work on every backend: one greedy group, after one warm-up pass that compiles kernels. */
const PROBE = { prompt: 'Count: 1 2 3', groupSize: 4, maxNewTokens: 12, temperature: 0, seed: 0 } as const;

export async function msPerToken(policy: Policy, signal?: AbortSignal): Promise<number> {
  await policy.generateGroup({ ...PROBE, maxNewTokens: 2, ...(signal ? { signal } : {}) });
  const start = performance.now();
  const group = await policy.generateGroup({ ...PROBE, ...(signal ? { signal } : {}) });
  return (performance.now() - start) / Math.max(1, group.usage.completionTokens);
}

export interface CalibrateOptions<T extends { policy: Policy }> {
  model: string;
  adapter: string;
  load(backend: CalibratedBackend): Promise<T>;
  /** Frees a loaded model that was not chosen. */
  discard(loaded: T): Promise<void>;
  cache?: CalibrationCache;
  signal?: AbortSignal;
}

/** Loads the model on the backend a cached or fresh calibration picks; returns it and the calibration. */
export async function calibratedLoad<T extends { policy: Policy }>(options: CalibrateOptions<T>): Promise<{ loaded: T; calibration: Calibration; cached: boolean }> {
  const { model, adapter, load, discard, cache, signal } = options;
  const known = await cache?.getCalibration(model, adapter).catch(() => undefined);
  if (known) return { loaded: await load(known.choice), calibration: known, cached: true };

  const gpu = await load('webgpu');
  let cpu: T | null = null;
  try {
    const gpuMs = await msPerToken(gpu.policy, signal);
    cpu = await load('wasm');
    const cpuMs = await msPerToken(cpu.policy, signal);
    const choice: CalibratedBackend = gpuMs < cpuMs ? 'webgpu' : 'wasm';
    const calibration: Calibration = { model, adapter, choice, msPerToken: { webgpu: gpuMs, wasm: cpuMs }, measuredAt: new Date().toISOString() };
    await cache?.putCalibration(calibration).catch(() => undefined);
    const [kept, dropped] = choice === 'webgpu' ? [gpu, cpu] : [cpu, gpu];
    await discard(dropped);
    return { loaded: kept, calibration, cached: false };
  } catch (error) {
    await Promise.all([discard(gpu), cpu ? discard(cpu) : undefined]).catch(() => undefined);
    throw error;
  }
}

/** What Auto chose and why, in words for the model panel. */
export function calibrationNote({ choice, msPerToken: ms, adapter }: Calibration, cached: boolean): string {
  const speed = (backend: CalibratedBackend) => `${(1000 / ms[backend]).toFixed(0)} tokens/s`;
  const name = { webgpu: `WebGPU (${adapter})`, wasm: 'WebAssembly' };
  const other: CalibratedBackend = choice === 'webgpu' ? 'wasm' : 'webgpu';
  return `Auto chose ${name[choice]}: ${speed(choice)} against ${speed(other)} on ${name[other]}, ${cached ? 'as measured earlier in this browser' : 'measured just now on this model'}.`;
}
