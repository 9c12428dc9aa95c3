/**
 * The page a package user would write, built by each bundler with the configuration the
 * installing guide gives for it (read from docs/installing.md itself), and what the page reports. It loads the bundled
 * model on WebAssembly and samples a group on the page and in workers, throws typed errors in the
 * minified bundle and across a worker, loads a model from a second origin as from the hub, and
 * asks for onnxruntime-web's files where they are not.
 */
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { root, run } from './consumer.js';

export const MAIN_JS = `
import { createWorkerPolicy, InvalidInputError, ModelLoadError } from 'webgrpo';
import { computeAdvantages } from 'webgrpo/math';
import { loadOnnxPolicy } from 'webgrpo/onnx';

const params = new URLSearchParams(location.search);
const wasmPaths = params.get('ort') || undefined;
const describe = (e) => ({ name: e.name, message: e.message, code: e.code, argument: e.argument, invalidInput: e instanceof InvalidInputError, modelLoad: e instanceof ModelLoadError });
const worker = (init) => createWorkerPolicy(new Worker(new URL('./worker.js', import.meta.url), { type: 'module' }), { init });
const sample = async (policy) => {
  const group = await policy.generateGroup({ prompt: 'Hello', groupSize: 4, maxNewTokens: 8, seed: 1 });
  return { rows: group.completions.length, tokens: group.completions.map((c) => c.tokenIds.length), finite: group.completions.every((c) => c.logprobs.every(Number.isFinite)), threads: policy.info.threads, threadsNote: policy.info.threadsNote };
};

async function main() {
  const report = { isolated: self.crossOriginIsolated, cores: navigator.hardwareConcurrency, className: InvalidInputError.name };
  try {
    computeAdvantages([1, 2, 3], { groupSize: 2 });
  } catch (e) {
    report.thrown = describe(e);
  }
  const model = '/models/webgrpo-tiny/';
  report.page = await sample(await loadOnnxPolicy({ model, device: 'wasm', ...(wasmPaths ? { wasmPaths } : {}) }));
  const threaded = await worker({ model, device: 'wasm', wasmPaths: '/ort/' });
  report.worker = await sample(threaded);
  try {
    await threaded.generateGroup({ prompt: 'Hello', groupSize: 0 });
  } catch (e) {
    report.workerThrown = describe(e);
  }
  report.hub = await sample(await worker({ model: 'webgrpo/webgrpo-tiny', device: 'wasm', remoteHost: params.get('hub'), ...(wasmPaths ? { wasmPaths } : {}) }));
  try {
    await worker({ model, device: 'wasm', wasmPaths: '/no-such-folder/' });
  } catch (e) {
    report.missingWasm = describe(e);
  }
  window.report = report;
}
main().catch((e) => (window.report = { failed: String(e && e.stack ? e.stack : e) }));
`;

export const WORKER_JS = `
import { exposePolicy } from 'webgrpo';
import { loadOnnxPolicy } from 'webgrpo/onnx';

exposePolicy(async ({ remoteHost, ...options }, { onProgress }) => {
  if (remoteHost) {
    // A hub model's files from another origin: transformers.js downloads from remoteHost.
    const { env } = await import('@huggingface/transformers');
    env.remoteHost = remoteHost;
    env.remotePathTemplate = '{model}/';
  }
  return loadOnnxPolicy({ ...options, onProgress });
});
`;

export type Bundler = 'vite' | 'webpack' | 'esbuild';

/** The installing guide's configuration for each bundler: Vite's config file, esbuild's command line. */
export async function guideConfig(): Promise<{ viteConfig: string; esbuildArgs: string[] }> {
  const guide = await readFile(join(root, 'docs/installing.md'), 'utf8');
  const viteConfig = /```js\n *(\/\/ vite\.config\.js\n[\s\S]*?) *```/.exec(guide)?.[1]?.replace(/^ +/gm, '');
  const esbuild = /```sh\n *(esbuild [^\n]*)\n *```/.exec(guide)?.[1];
  if (!viteConfig || !esbuild) throw new Error("docs/installing.md lost its vite.config.js or esbuild block");
  return { viteConfig, esbuildArgs: esbuild.split(/\s+/).slice(1) };
}

/**
 * Builds the page in `app/<bundler>/` (its node_modules are the consumer's, one folder up) and
 * returns the folder to serve. Each is a production build, minified.
 */
/** A build that hangs fails with its bundler named instead of running into the test's own timeout. */
const BUILD_TIMEOUT_MS = 150_000;

export async function buildPage(app: string, bundler: Bundler): Promise<string> {
  const project = join(app, bundler);
  await mkdir(join(project, 'src'), { recursive: true });
  await writeFile(join(project, 'src/main.js'), MAIN_JS);
  await writeFile(join(project, 'src/worker.js'), WORKER_JS);
  const { viteConfig, esbuildArgs } = await guideConfig();
  const bin = (name: string) => join(root, 'node_modules/.bin', name);
  if (bundler === 'vite') {
    await writeFile(join(project, 'vite.config.js'), viteConfig);
    await writeFile(join(project, 'index.html'), '<!doctype html><meta charset="utf-8"><script type="module" src="/src/main.js"></script>\n');
    await run(bin('vite'), ['build', '--logLevel', 'error'], { cwd: project, maxBuffer: 16 << 20, timeout: BUILD_TIMEOUT_MS });
  } else if (bundler === 'webpack') {
    // No configuration: `webpack --mode production` builds src/index.js into dist/main.js.
    await writeFile(join(project, 'src/index.js'), "import './main.js';\n");
    // The compiler is closed after its run: left open, its minifier's worker pool can keep the
    // process alive after the build is done.
    const build = `import webpack from ${JSON.stringify(join(root, 'node_modules/webpack/lib/index.js'))};
const compiler = webpack({ mode: 'production', context: process.cwd() });
compiler.run((error, stats) => {
  if (error || stats.hasErrors()) { console.error(error ?? stats.toString('errors-only')); process.exit(1); }
  compiler.close((closeError) => process.exit(closeError ? 1 : 0));
});`;
    await writeFile(join(project, 'build.mjs'), build);
    await run(process.execPath, ['build.mjs'], { cwd: project, maxBuffer: 16 << 20, timeout: BUILD_TIMEOUT_MS });
    await writeFile(join(project, 'dist/index.html'), '<!doctype html><meta charset="utf-8"><script src="./main.js"></script>\n');
  } else {
    await run(bin('esbuild'), [...esbuildArgs, '--log-level=error'], { cwd: project, maxBuffer: 16 << 20, timeout: BUILD_TIMEOUT_MS });
    await writeFile(join(project, 'dist/index.html'), '<!doctype html><meta charset="utf-8"><script type="module" src="./main.js"></script>\n');
  }
  return join(project, 'dist');
}
