/**
 * Preloaded into a real `webgrpo train` process (`node --import tsx --import kill-point.ts
 * lib/cli/main.ts train …`), it kills that process with SIGKILL at the point `WEBGRPO_KILL` names:
 *
 * - `sampling:N`: as the model runs its N-th decoding pass of a group being sampled (onnxruntime's
 *   session run called from the policy's group batcher), so mid-generation;
 * - `after-step:N`: right after the N-th step file this process committed is in place (linked),
 *   before anything that follows the commit (its temporary file's removal, the run record's
 *   update, the epoch's export);
 * - `torn-step:N`: in the middle of writing the N-th step file: half its bytes in the temporary
 *   file, then killed, as a kill during write(2) leaves it.
 *
 * A point the run never reaches lets it end normally; the test then sees exit code 0, not SIGKILL.
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';

const [kind, at] = (process.env.WEBGRPO_KILL ?? '').split(':');
const target = Number(at);
if (!['sampling', 'after-step', 'torn-step'].includes(kind) || !Number.isInteger(target) || target < 1) {
  throw new Error(`WEBGRPO_KILL must be sampling:N, after-step:N or torn-step:N, got "${process.env.WEBGRPO_KILL}"`);
}
const require = createRequire(import.meta.url);
const die = (): never => {
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
};
const STEP_FILE = /[/\\]steps[/\\]\d{6}\.json$/;
const STEP_TEMP = /[/\\]steps[/\\]\d{6}\.json\.\d+\.[0-9a-f-]+\.tmp$/;

if (kind === 'sampling') {
  // The one onnxruntime-node transformers.js samples with (the same module instance).
  const ort = require('onnxruntime-node') as { InferenceSession: { prototype: { run: (...args: unknown[]) => Promise<unknown> } } };
  const run = ort.InferenceSession.prototype.run;
  let passes = 0;
  ort.InferenceSession.prototype.run = function (...args: unknown[]) {
    // Sampling passes are the group batcher's (policy/onnx/batch.ts); the load's probes and the trainer's graphs are not.
    if (new Error().stack?.includes('GroupBatcher.') && ++passes === target) die();
    return run.apply(this, args);
  };
} else {
  const fsp = require('node:fs/promises') as Record<string, (...args: unknown[]) => Promise<unknown>>;
  let steps = 0;
  if (kind === 'after-step') {
    // The file store commits a step by hard-linking its temporary file into place (rename for other files).
    for (const name of ['link', 'rename']) {
      const original = fsp[name];
      fsp[name] = async (from: unknown, to: unknown) => {
        await original(from, to);
        if (STEP_FILE.test(String(to)) && ++steps === target) die();
      };
    }
  } else {
    // writeAtomic writes its temporary file through a FileHandle: the handle's path is remembered at open.
    const paths = new WeakMap<object, string>();
    const open = fsp.open;
    fsp.open = async (path: unknown, ...rest: unknown[]) => {
      const handle = (await open(path, ...rest)) as object;
      paths.set(handle, String(path));
      return handle;
    };
    const probe = (await open('/dev/null', 'r')) as { close(): Promise<void> };
    const proto = Object.getPrototypeOf(probe) as { writeFile: (this: object, data: unknown, ...rest: unknown[]) => Promise<void>; write: (this: object, data: Uint8Array) => Promise<unknown> };
    await probe.close();
    const writeFile = proto.writeFile;
    proto.writeFile = async function (data: unknown, ...rest: unknown[]) {
      if (STEP_TEMP.test(paths.get(this) ?? '') && ++steps === target) {
        const bytes = Buffer.from(data as string);
        await proto.write.call(this, bytes.subarray(0, bytes.length >> 1));
        die();
      }
      return writeFile.call(this, data, ...rest);
    };
  }
  // The stores import these functions by name: make those bindings see the wrappers.
  syncBuiltinESMExports();
}
