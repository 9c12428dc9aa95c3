/**
 * Loaded with `node --import page.mjs` before the check's bundle, so that every module of the
 * bundle (transformers.js reads `navigator.gpu` as it loads) finds the page's globals in place.
 * Dawn's binding sits beside this file in the packed folder (webgpu/index.js). onnxruntime-web's
 * threads are workers that Node starts with this process's flags: they need none of it.
 */
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';
import { installPageGlobals } from './page-globals.js';

if (isMainThread) {
  register(new URL('./page-modules.mjs', import.meta.url));
  await installPageGlobals(new URL('./webgpu/index.js', import.meta.url).pathname);
}
