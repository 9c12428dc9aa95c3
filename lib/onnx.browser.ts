/**
 * `webgrpo/onnx` as browser bundlers resolve it (the package's `default` condition): the exports
 * of `onnx.ts`, with only the browser's way to a model's files, so the bundle holds no `node:`
 * import. `bundledModelPath()` and `skillModelPath()` reject here: a site serves the bundled models.
 */
import { browserHost } from './policy/onnx/host-browser.js';
import { loadOnnxPolicyOn, type OnnxPolicyOptions } from './policy/onnx/load.js';
import type { OnnxPolicy } from './policy/onnx/policy.js';

/** A transformers.js-compatible decoder (a same-origin URL or path, a hub id) as a `Policy`. */
export function loadOnnxPolicy(options: OnnxPolicyOptions): Promise<OnnxPolicy> {
  return loadOnnxPolicyOn(browserHost, options);
}

export type { OnnxDtype, OnnxLoadProgress, OnnxPolicyOptions } from './policy/onnx/load.js';
export { MAX_GROUP_SIZE, type OnnxPolicy, type OnnxPolicyStats } from './policy/onnx/policy.js';
export { adapterName, isSoftwareAdapter, type AdapterLike, type OnnxDevice } from './policy/onnx/device.js';
export { BUNDLED_MODEL_URL_PATH, SKILL_MODEL_URL_PATH } from './policy/onnx/bundled.js';
export { bundledModelPath, skillModelPath } from './policy/onnx/bundled-browser.js';
export { resolveSampling, sampleToken, type SampledToken, type SamplingConfig } from './policy/sampling.js';
