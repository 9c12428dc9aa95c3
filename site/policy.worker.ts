/**
 * The model's own thread. transformers.js and onnxruntime-web load here, on first use, so the page
 * never parses them and a forward pass never blocks a frame. The page talks to this worker through
 * `createWorkerPolicy`, which relays progress, token events, aborts and typed errors.
 */
import { exposePolicy } from '../lib/worker/index.js';
import { loadOnnxPolicy, type OnnxPolicyOptions } from '../lib/onnx.js';

exposePolicy((init, { onProgress }) => loadOnnxPolicy({ ...(init as OnnxPolicyOptions), onProgress }));
