/**
 * `webgrpo/onnx`: local ONNX language models as a GRPO `Policy`, on WebGPU, WebAssembly or the
 * Node CPU, with shared-prefix group sampling and exact per-token log-probs.
 *
 *   const policy = await loadOnnxPolicy({ model: await bundledModelPath() });        // Node
 *   const policy = await loadOnnxPolicy({ model: '/models/webgrpo-tiny/' });          // browser
 *   const policy = await loadOnnxPolicy({ model: 'HuggingFaceTB/SmolLM2-135M-Instruct', dtype: 'q4f16' });
 *
 * This is the entry Node resolves (the package's `node` condition); it picks the platform at run
 * time, so the repository's own code loads it anywhere. Browser bundles resolve `onnx.browser.ts`,
 * the same exports without Node's file access, so they hold no `node:` import.
 *
 * @module webgrpo/onnx
 */
import { browserHost } from './policy/onnx/host-browser.js';
import { nodeHost } from './policy/onnx/host-node.js';
import { loadOnnxPolicyOn, type OnnxPolicyOptions } from './policy/onnx/load.js';
import type { OnnxPolicy } from './policy/onnx/policy.js';
import { isNodeRuntime } from './policy/onnx/runtime.js';

/** A transformers.js-compatible decoder (a folder, a same-origin URL, a hub id) as a `Policy`. */
export function loadOnnxPolicy(options: OnnxPolicyOptions): Promise<OnnxPolicy> {
  return loadOnnxPolicyOn(isNodeRuntime() ? nodeHost : browserHost, options);
}

export type { OnnxDtype, OnnxLoadProgress, OnnxPolicyOptions } from './policy/onnx/load.js';
export { MAX_GROUP_SIZE, type OnnxPolicy, type OnnxPolicyStats } from './policy/onnx/policy.js';
export { adapterName, isSoftwareAdapter, type AdapterLike, type OnnxDevice } from './policy/onnx/device.js';
export { BUNDLED_MODEL_URL_PATH, SKILL_MODEL_URL_PATH } from './policy/onnx/bundled.js';
export { bundledModelPath, skillModelPath } from './policy/onnx/bundled-node.js';
export { resolveSampling, sampleToken, type SampledToken, type SamplingConfig } from './policy/sampling.js';
