/**
 * One backend's half of the GPU check, in a process of its own (its own onnxruntime-web build,
 * thread count and peak memory), through the browser entry of webgrpo as a page runs it: load the
 * policy on `webgpu` or `wasm`, sample a group (tokens/s), a scoring pass, and LoRA steps through
 * `GrpoTrainer` on `loraEngine` with the training graphs on the same execution provider.
 *
 * The scoring pass and the steps run on `sequences` when given (the other backend's sampled
 * group), so both backends score and train on the same tokens; otherwise on the group sampled here.
 * Times are wall-clock: on a GPU the CPU time of the process says little. Each phase that fails
 * is recorded with its error and the rest still reported.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import * as ort from 'onnxruntime-web/webgpu';
import { GrpoConfig } from '../../lib/math.js';
import { adapterName, isSoftwareAdapter, loadOnnxPolicy, type AdapterLike } from '../../lib/onnx.browser.js';
import { GrpoTrainer, groupRolloutBatch, loraEngine, loraModel, type LoraEngineOptions } from '../../lib/grad.js';
import { PAGE_ORIGIN } from './page-origin.js';
import { trigError, type TrigError } from './trig-probe.js';

export const PROMPT = 'Answer with digits only: what is 7 x 6?';

export interface Sequences {
  promptTokenIds: number[];
  tokenIds: number[][];
  /** The sampler's log-probs of those tokens (the old policy's, in the GRPO loss). */
  logprobs: number[][];
}

export interface StepRecord {
  ms: number;
  loss: number;
  gradNorm: number;
}

export interface BackendResult {
  backend: 'webgpu' | 'wasm';
  adapter?: { name: string; software: boolean; vendor?: string; architecture?: string; description?: string };
  note?: string;
  threads?: number;
  loadMs?: number;
  warmupMs?: number;
  sample?: { G: number; T: number; tokens: number; ms: number; tokensPerSecond: number };
  sampled?: Sequences;
  scoring?: { on: 'own' | 'given'; ms: number; firstMs: number; logprobs: number[][] };
  lora?: { readMs: number; steps: StepRecord[] };
  /** The execution provider's Sin and Cos over the run's rotary angles (trig-probe.ts). */
  trig?: TrigError;
  peakRssBytes: number;
  errors: Array<{ phase: string; message: string }>;
}

export interface BackendOptions {
  backend: 'webgpu' | 'wasm';
  model: string;
  G: number;
  T: number;
  /**
   * The folder of onnxruntime-web's runtime files (the .mjs glue and .wasm of each build). The
   * glue is imported from the page's origin (so its threads can start: page-modules.ts), the
   * .wasm read as a file (onnxruntime-web's glue reads it with fs in Node, which takes no http: URL).
   */
  ortDir: string;
  sequences?: Sequences;
  loraSteps: number;
  log: (line: string) => void;
  /** Called with the result so far after every phase, so a process ended at its time limit leaves what it measured. */
  save?: (result: BackendResult) => Promise<void>;
}

export async function runBackend(options: BackendOptions): Promise<BackendResult> {
  const { backend, G, T, log } = options;
  const result: BackendResult = { backend, peakRssBytes: 0, errors: [] };
  const phase = async <V>(name: string, fn: () => Promise<V>): Promise<V | undefined> => {
    try {
      return await fn();
    } catch (error) {
      const message = error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ''}` : String(error);
      log(`${backend}: ${name} failed: ${message}`);
      result.errors.push({ phase: name, message });
      return undefined;
    } finally {
      result.peakRssBytes = process.resourceUsage().maxRSS * 1024;
      await options.save?.(result);
    }
  };

  if (backend === 'webgpu') {
    const gpu = (globalThis.navigator as unknown as { gpu?: { requestAdapter(): Promise<(AdapterLike & { info?: Record<string, string> }) | null> } }).gpu;
    const adapter = await gpu?.requestAdapter();
    if (adapter) {
      const info = adapter.info ?? {};
      result.adapter = { name: adapterName(adapter), software: isSoftwareAdapter(adapter), vendor: info.vendor, architecture: info.architecture, description: info.description };
      log(`webgpu: adapter ${result.adapter.name}${result.adapter.software ? ' (software)' : ''}`);
    }
  }

  let t = performance.now();
  // The build webgrpo picks for the backend when given a folder: WebGPU's (asyncify) or the plain WebAssembly one.
  const build = backend === 'webgpu' ? 'ort-wasm-simd-threaded.asyncify' : 'ort-wasm-simd-threaded';
  const wasmPaths = { mjs: `${PAGE_ORIGIN}${join(options.ortDir, `${build}.mjs`)}`, wasm: pathToFileURL(join(options.ortDir, `${build}.wasm`)).href };
  const policy = await phase('load', () => loadOnnxPolicy({ model: options.model, device: backend, dtype: 'fp32', wasmPaths }));
  if (!policy) return result;
  result.loadMs = performance.now() - t;
  result.note = policy.info.note;
  result.threads = policy.info.threads;
  log(`${backend}: loaded in ${(result.loadMs / 1000).toFixed(1)} s (${policy.info.note ?? ''}; ${policy.info.threads ?? '?'} threads)`);
  try {
    // Compiles the kernels (on WebGPU, the shaders) so the timed group measures sampling alone.
    t = performance.now();
    await phase('warm-up', () => policy.generateGroup({ prompt: PROMPT, groupSize: 2, maxNewTokens: 4, seed: 7 }));
    result.warmupMs = performance.now() - t;

    t = performance.now();
    const group = await phase('sample', () => policy.generateGroup({ prompt: PROMPT, groupSize: G, maxNewTokens: T, seed: 1 }));
    if (group) {
      const ms = performance.now() - t;
      const tokens = group.completions.reduce((n, c) => n + c.tokenIds.length, 0);
      result.sample = { G, T, tokens, ms, tokensPerSecond: (tokens / ms) * 1000 };
      result.sampled = { promptTokenIds: group.promptTokenIds, tokenIds: group.completions.map((c) => c.tokenIds), logprobs: group.completions.map((c) => c.logprobs) };
      log(`${backend}: sampled ${G} x ${T} (${tokens} tokens) in ${(ms / 1000).toFixed(2)} s, ${result.sample.tokensPerSecond.toFixed(0)} tokens/s`);
    }
    const sequences = options.sequences ?? result.sampled;
    if (!sequences) return result;
    // Every rotary angle of the run: position (prompt and completion) times a frequency of at most 1.
    const positions = sequences.promptTokenIds.length + Math.max(...sequences.tokenIds.map((row) => row.length));
    result.trig = await phase('sin and cos', () => trigError(ort as unknown as Parameters<typeof trigError>[0], backend, positions));

    await phase('scoring', async () => {
      t = performance.now();
      await policy.scoreCompletions({ prompt: PROMPT, completions: sequences.tokenIds });
      const firstMs = performance.now() - t;
      t = performance.now();
      const scored = await policy.scoreCompletions({ prompt: PROMPT, completions: sequences.tokenIds });
      result.scoring = { on: options.sequences ? 'given' : 'own', ms: performance.now() - t, firstMs, logprobs: scored.logprobs };
      log(`${backend}: scoring pass ${(result.scoring.ms / 1000).toFixed(2)} s (first ${(firstMs / 1000).toFixed(2)} s)`);
    });

    await phase('lora', async () => {
      t = performance.now();
      const model = await loraModel(policy, { r: 8, alpha: 16, seed: 3 });
      const readMs = performance.now() - t;
      // The training graphs on the sampler's own onnxruntime-web and execution provider, as in a page.
      const engineOptions: LoraEngineOptions = {
        runtime: async () => ort as unknown as Awaited<ReturnType<NonNullable<LoraEngineOptions['runtime']>>>,
        sessionOptions: { executionProviders: [backend], logSeverityLevel: 3 },
      };
      const trainer = new GrpoTrainer(loraEngine(model, engineOptions), { lr: 1e-4 }, new GrpoConfig({ numGenerations: G, beta: 0, entropyCoeff: 0 }));
      try {
        const rewards = sequences.tokenIds.map((_, i) => (i % 2 === 0 ? 1 : 0));
        const batch = groupRolloutBatch([{ completions: sequences.tokenIds.map((tokenIds, i) => ({ tokenIds, logprobs: sequences.logprobs[i] })), rewards }]);
        result.lora = { readMs, steps: [] };
        for (let i = 0; i < options.loraSteps; i++) {
          t = performance.now();
          const step = await trainer.trainStep(batch, [{ prompt: PROMPT }]);
          const record = { ms: performance.now() - t, loss: step.loss, gradNorm: step.metrics.gradNorm };
          result.lora.steps.push(record);
          await options.save?.(result);
          log(`${backend}: LoRA step ${i + 1}: ${(record.ms / 1000).toFixed(2)} s, loss ${record.loss.toExponential(4)}, gradient norm ${record.gradNorm.toExponential(4)}`);
        }
      } finally {
        trainer.dispose();
      }
    });
  } finally {
    await policy.dispose();
  }
  return result;
}
