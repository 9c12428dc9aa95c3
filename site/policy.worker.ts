/**
 * The model's own thread. transformers.js and onnxruntime-web load here, on first use, so the page
 * never parses them and a forward pass never blocks a frame. The page talks to this worker through
 * `createWorkerPolicy`, which relays progress, token events, aborts and typed errors. Gradient runs
 * run here too (gradient-worker.ts): the trainer needs the policy's head and hidden states, which
 * live with the engine.
 */
import { exposePolicy, type WorkerScope } from '../lib/index.js';
import { loadOnnxPolicy, type OnnxPolicy, type OnnxPolicyOptions } from '../lib/onnx.browser.js';
import { serveGradientRuns } from './lib/gradient-worker.js';

let policy: OnnxPolicy | null = null;
const scope = serveGradientRuns(() => policy, globalThis as unknown as WorkerScope);
exposePolicy(async (init, { onProgress }) => (policy = await loadOnnxPolicy({ ...(init as OnnxPolicyOptions), onProgress })), scope);
