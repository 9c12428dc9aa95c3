/**
 * `webgrpo/onnx`: local ONNX language models as a GRPO `Policy`, on WebGPU, WebAssembly or the
 * Node CPU, with shared-prefix group sampling and exact per-token log-probs.
 *
 *   const policy = await loadOnnxPolicy({ model: await bundledModelPath() });        // Node
 *   const policy = await loadOnnxPolicy({ model: '/models/webgrpo-tiny/' });          // browser
 *   const policy = await loadOnnxPolicy({ model: 'HuggingFaceTB/SmolLM2-135M-Instruct', dtype: 'q4f16' });
 */
export { loadOnnxPolicy, type OnnxDtype, type OnnxLoadProgress, type OnnxPolicyOptions } from './policy/onnx/load.js';
export { MAX_GROUP_SIZE, type OnnxPolicy, type OnnxPolicyStats } from './policy/onnx/policy.js';
export type { OnnxDevice } from './policy/onnx/device.js';
export { bundledModelPath, BUNDLED_MODEL_URL_PATH, skillModelPath, SKILL_MODEL_URL_PATH } from './policy/onnx/bundled.js';
export { resolveSampling, sampleToken, type SampledToken, type SamplingConfig } from './policy/sampling.js';
