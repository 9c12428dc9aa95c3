/**
 * The playground's device choice, apart from the page: which WebGPU adapters Auto refuses, the
 * measured pick between WebGPU and WebAssembly (on two toy policies of known speed), and the
 * setup form's checks of the numbers it runs with.
 */
import { describe, expect, it } from 'vitest';
import { adapterName, isSoftwareAdapter } from '../../lib/policy/onnx/device.js';
import { calibratedLoad, calibrationNote, type Calibration, type CalibratedBackend } from '../../site/lib/calibrate.js';
import { settingProblem, setupProblems, COMMON_SETTINGS, INITIAL_SETUP } from '../../site/lib/setup.js';
import type { Policy } from '../../lib/index.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';

describe('software adapters', () => {
  it('are told apart from hardware ones by isFallbackAdapter and by name', () => {
    expect(isSoftwareAdapter({ info: { vendor: 'google', architecture: 'swiftshader' } })).toBe(true);
    expect(isSoftwareAdapter({ info: { vendor: 'mesa', device: 'llvmpipe (LLVM 15.0.6, 256 bits)' } })).toBe(true);
    expect(isSoftwareAdapter({ info: { vendor: 'microsoft', description: 'Microsoft Basic Render Driver' } })).toBe(true);
    expect(isSoftwareAdapter({ info: { vendor: 'nvidia', architecture: 'ampere' }, isFallbackAdapter: true })).toBe(true);
    expect(isSoftwareAdapter({ info: { vendor: 'intel', architecture: 'gen-12lp', isFallbackAdapter: true } })).toBe(true);
    expect(isSoftwareAdapter({ info: { vendor: 'nvidia', architecture: 'ampere' } })).toBe(false);
    expect(isSoftwareAdapter({ info: { vendor: 'apple', architecture: 'metal-3' } })).toBe(false);
    expect(isSoftwareAdapter({})).toBe(false);
    expect(adapterName({ info: { vendor: 'google', architecture: 'swiftshader' } })).toBe('google swiftshader');
    expect(adapterName({})).toBe('unnamed adapter');
  });
});

describe('calibratedLoad', () => {
  /** Two backends as toy policies, one slower per decode step; records what was loaded and discarded. */
  interface Loaded {
    backend: CalibratedBackend;
    policy: Policy;
  }
  function backends(delays: Record<CalibratedBackend, number>) {
    const loads: CalibratedBackend[] = [];
    const discarded: CalibratedBackend[] = [];
    return {
      loads,
      discarded,
      load: async (backend: CalibratedBackend): Promise<Loaded> => {
        loads.push(backend);
        return { backend, policy: createToyPolicy({ stepDelayMs: delays[backend] }) };
      },
      discard: async (loaded: Loaded): Promise<void> => {
        discarded.push(loaded.backend);
      },
    };
  }
  function memoryCache() {
    const kept = new Map<string, Calibration>();
    return {
      kept,
      getCalibration: async (model: string, adapter: string) => kept.get(`${model}/${adapter}`),
      putCalibration: async (c: Calibration) => void kept.set(`${c.model}/${c.adapter}`, c),
    };
  }

  it('keeps the faster backend, discards the other, and caches the measurement per model and adapter', async () => {
    const cache = memoryCache();
    // 25 ms more a decode step: a margin no load on a shared machine closes (6 ms was reordered once, beside a browser bench).
    const slowGpu = backends({ webgpu: 25, wasm: 0 });
    const first = await calibratedLoad({ model: 'tiny', adapter: 'nvidia ampere', ...slowGpu, cache });
    expect(first.loaded.backend).toBe('wasm');
    expect(first.cached).toBe(false);
    expect(slowGpu.discarded).toEqual(['webgpu']);
    expect(first.calibration.msPerToken.webgpu).toBeGreaterThan(first.calibration.msPerToken.wasm);
    expect(calibrationNote(first.calibration, false)).toMatch(/^Auto chose WebAssembly: \d+ tokens\/s against \d+ tokens\/s on WebGPU \(nvidia ampere\), measured just now/);

    // Measured once: the next load of that model on that adapter goes straight to the choice.
    const again = backends({ webgpu: 25, wasm: 0 });
    const second = await calibratedLoad({ model: 'tiny', adapter: 'nvidia ampere', ...again, cache });
    expect(again.loads).toEqual(['wasm']);
    expect(second).toMatchObject({ cached: true, calibration: first.calibration });

    const fastGpu = backends({ webgpu: 0, wasm: 25 });
    const other = await calibratedLoad({ model: 'tiny', adapter: 'apple metal-3', ...fastGpu, cache });
    expect(other.loaded.backend).toBe('webgpu');
    expect(fastGpu.discarded).toEqual(['wasm']);
    expect(cache.kept.size).toBe(2);
  });

  it('frees what it loaded when the second backend fails to load, and caches nothing', async () => {
    const b = backends({ webgpu: 0, wasm: 0 });
    const cache = memoryCache();
    const load = async (backend: CalibratedBackend) => {
      if (backend === 'wasm') throw new Error('no wasm here');
      return b.load(backend);
    };
    await expect(calibratedLoad({ model: 'tiny', adapter: 'x', load, discard: b.discard, cache })).rejects.toThrow('no wasm here');
    expect(b.discarded).toEqual(['webgpu']);
    expect(cache.kept.size).toBe(0);
  });
});

describe('setup checks', () => {
  it('names an emptied or out-of-range number instead of running with a default', () => {
    expect(settingProblem('groupSize', null)).toBe('Group size: enter a whole number from 2 to 16.');
    expect(settingProblem('temperature', Number.NaN)).toBe('Temperature: enter a number from 0 to 2.');
    expect(settingProblem('groupSize', 1000)).toBe('Group size: 1000 is not a whole number from 2 to 16.');
    expect(settingProblem('groupSize', 2.5)).toMatch(/not a whole number/);
    expect(settingProblem('seed', -1)).toBe('Seed: -1 is not a whole number 0 or more.');
    expect(settingProblem('temperature', 0.7)).toBeNull();
    expect(setupProblems(INITIAL_SETUP, COMMON_SETTINGS)).toEqual({});
    expect(Object.keys(setupProblems({ ...INITIAL_SETUP, groupSize: null as unknown as number, items: 0 }, COMMON_SETTINGS))).toEqual(['items', 'groupSize']);
  });
});
