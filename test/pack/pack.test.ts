/**
 * The published artefact, tested as a user gets it (test/pack/consumer.ts): packed from a copy of
 * the repository (its dist/ and package.json stay as they are), installed from the tarball into a
 * fresh project, imported from plain Node (a resolve hook refuses onnxruntime and transformers.js,
 * so the core never pulls them in), required, run from the command line, type-checked with every
 * example of the README and docs/, and built into a page by Vite, webpack 5 and esbuild, minified,
 * with the configuration docs/installing.md gives each, which Chromium then runs (test/pack/consumer-app.ts).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../browser/launch.js';
import { docBlocks } from '../docs/blocks.js';
import { buildPage, type Bundler } from './consumer-app.js';
import { cleanEnv, installProject, packInto, pinned, root, run, type Packed } from './consumer.js';
import { serveStatic } from './static-server.js';

const hooks = `
const forbidden = /(^|\\/)(onnxruntime-(node|web|common)|@huggingface\\/transformers)(\\/|$)/;
export async function resolve(specifier, context, next) {
  if (forbidden.test(specifier)) throw new Error('webgrpo core imported ' + specifier);
  return next(specifier, context);
}
`;

const check = `
import { register } from 'node:module';
import assert from 'node:assert/strict';
register('./hooks.mjs', import.meta.url);
const w = await import('webgrpo');
const m = await import('webgrpo/math');

const close = (a, b, tol = 1e-12) => assert.ok(Math.abs(a - b) <= tol, a + ' != ' + b);
const adv = m.computeAdvantages([1, 0, 0, 1], { groupSize: 4 });
const s = Math.sqrt(1 / 3);
adv.advantages.forEach((a, i) => close(a, (i === 0 || i === 3 ? 0.5 : -0.5) / (s + 1e-4)));

const loss = m.grpoLoss({ logps: [[-1, -2]], oldLogps: [[-1.3, -2]], advantages: [1], mask: [[1, 1]] }, { lossType: 'grpo' });
close(loss.loss, -(1.2 + 1) / 2);
assert.deepEqual(loss.grad, [[0, -0.5]]);
close(loss.metrics.clipRatioHigh, 0.5);

// TRL's newer objectives and corrections, through the public entry.
const sampled = { logps: [[-1, -2], [-1, -1]], samplingLogps: [[-2.6, -2.6], [-1, -1.1]], advantages: [1, -1], mask: [[1, 1], [1, 0]], entropies: [[0.1, 0.5], [0.9, 0]] };
close(m.grpoLoss({ logps: [[-1]], oldLogps: [[-1.5]], advantages: [2], mask: [[1]] }, { lossType: 'cispo', epsilonHigh: 1.2 }).loss, 2.4);
close(m.grpoLoss({ logps: [[-1]], advantages: [3], mask: [[1]] }, { lossType: 'sapo' }).loss, -6);
close(m.grpoLoss({ logps: [[-1, -2]], advantages: [0.5], mask: [[1, 1]] }, { lossType: 'vespo' }).metrics.vespoPhiMean, 1);
close(m.grpoLoss({ logps: [[-1, -1, -1]], advantages: [1], mask: [[1, 1, 1]] }, { lossType: 'luspo', importanceSamplingLevel: 'sequence' }).loss, -3);
const corrected = m.grpoLoss(sampled, { importanceSampling: { mode: 'sequence_mask' }, offPolicyMaskThreshold: 0.5, topEntropyQuantile: 0.5, biasCorrectedKl: true });
assert.equal(corrected.metrics.importanceSamplingRatio.min, 0);
assert.ok(Number.isFinite(corrected.loss) && corrected.grad.length === 2);
assert.deepEqual(m.samplingCorrection({ topK: 20 }, 1), { mode: 'sequence_mask', clipMax: 3 });
assert.equal(m.samplingCorrection({ topK: 0 }, 1), undefined);
close(m.nextAdaptiveEntropy({ coef: 0.01 }, 0.1, m.resolveAdaptiveEntropy({})).coef, 0.015);
assert.deepEqual([...m.LOSS_TYPES], ['grpo', 'bnpo', 'dr_grpo', 'dapo', 'cispo', 'sapo', 'luspo', 'vespo']);
assert.throws(() => m.grpoLoss(sampled, { lossType: 'vespo', importanceSampling: { mode: 'sequence_mask' } }), (e) => e instanceof w.InvalidInputError && e.argument === 'importanceSampling.mode');

const lp = m.tokenLogProbs({ logits: new Float32Array([0, 0, 0, 0]), dims: [1, 1, 4], ids: [2] });
close(lp.logps[0], -Math.log(4));
close(lp.entropy[0], Math.log(4));

const router = new w.GrpoRouter({ seed: 1 });
assert.ok(['a', 'b'].includes(router.route('hello', ['a', 'b'])));
assert.throws(() => m.computeAdvantages([1, 2, 3], { groupSize: 2 }), (e) => e instanceof w.InvalidInputError && e.argument === 'groupSize');

// webgrpo/method and webgrpo/tasks load without a model runtime too.
const method = await import('webgrpo/method');
const tasks = await import('webgrpo/tasks');
assert.ok(typeof method.startRun === 'function' && method.methodKinds().includes('training-free'));
assert.equal(tasks.getTask('digits').name, 'digits');

// webgrpo/parquet loads its writer from the installed package, and refuses a run with no group.
const { exportParquet } = await import('webgrpo/parquet');
const emptyRun = { run: { id: 'r', kind: 'gradient', config: {} }, items: [], steps: [], pending: [] };
assert.throws(() => exportParquet(emptyRun), (e) => e instanceof w.InvalidInputError && e.argument === 'run');
console.log('webgrpo ok: ' + Object.keys(w).length + ' exports, webgrpo/math ' + Object.keys(m).length);
`;

const typesCheck = `
import { InvalidInputError } from 'webgrpo';
import { computeAdvantages, grpoLoss, samplingCorrection, type AdaptiveEntropyState, type AdvantageResult, type GrpoLossConfig, type ImportanceSamplingMode, type ImportanceSamplingOptions, type RatioSummary, type SamplingSettings } from 'webgrpo/math';
const result: AdvantageResult = computeAdvantages([[1, null], [0, 2]], { groupSize: 2, scaleRewards: 'batch' });
const config: GrpoLossConfig = { lossType: 'dr_grpo', maxCompletionLength: 8 };
const family: GrpoLossConfig = { lossType: 'vespo', importanceSampling: { mode: 'token_mask', clipMax: null, clipMin: 0.5 }, topEntropyQuantile: 0.2, biasCorrectedKl: true, vespoKPos: 2 };
const mode: ImportanceSamplingMode = 'sequence_truncate';
const ratio: RatioSummary | undefined = grpoLoss({ logps: [[-1]], samplingLogps: [[-1]], advantages: [1], mask: [[1]] }, { ...family, importanceSampling: { mode: 'token_truncate' } }).metrics.importanceSamplingRatio;
const controller: AdaptiveEntropyState = { coef: 0.01 };
const sampling: SamplingSettings = { topP: 0.9 };
const chosen: ImportanceSamplingOptions | undefined = samplingCorrection(sampling, 1);
const grad: number[][] = grpoLoss({ logps: [[-1]], advantages: result.advantages.slice(0, 1), mask: [[1]] }, config).grad;
const argument: string = new InvalidInputError('x', 'y').argument;
export { grad, argument, mode, ratio, controller, chosen };
`;

const onnxCheck = `
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bundledModelPath, loadOnnxPolicy } from 'webgrpo/onnx';
const model = await bundledModelPath();
if (!existsSync(join(model, 'onnx/model.onnx'))) throw new Error('bundled model missing at ' + model);
const policy = await loadOnnxPolicy({ model });
const group = await policy.generateGroup({ prompt: 'Hello', groupSize: 3, maxNewTokens: 8, seed: 1 });
const scored = await policy.scoreCompletions({ prompt: 'Hello', completions: group.completions.map((c) => c.tokenIds) });
let maxGap = 0;
group.completions.forEach((c, i) => c.logprobs.forEach((lp, t) => (maxGap = Math.max(maxGap, Math.abs(lp - scored.logprobs[i][t])))));
await policy.dispose();
// webgrpo/grad: two gradient steps on the same model, its graph rewritten at load (onnx-proto).
const { gradientGrpo } = await import('webgrpo/grad');
const { digits } = await import('webgrpo/tasks');
const trainable = await loadOnnxPolicy({ model, hiddenState: true });
const trained = await gradientGrpo({ policy: trainable, dataset: digits.dataset({ size: 4 }), rewards: digits.rewards, groupSize: 4, batchSize: 2, maxNewTokens: 6 }).result();
await trainable.dispose();
console.log(JSON.stringify({ model, backend: policy.info.backend, rows: group.completions.length, maxGap, steps: trained.stepsCompleted, adapter: trained.adapter.format }));
`;

const onnxTypesCheck = `
import { loadOnnxPolicy, type OnnxPolicyOptions } from 'webgrpo/onnx';
import { GrpoTrainer, headEngine, rolloutSampling, type TrainStepMetrics, type TrainStepOptions } from 'webgrpo/grad';
export const stepOptions: TrainStepOptions = { sampling: { topK: 20 }, ...rolloutSampling([{ completions: [{ tokenIds: [1], logprobs: [-1], finishReason: 'length' }], rewards: [1] }]) };
export const ratioMax: number | undefined = ({} as TrainStepMetrics).importanceSamplingRatio?.max;
import type { GroupResult, Policy } from 'webgrpo';
export async function train(): Promise<TrainStepMetrics['loss']> {
  const trainer = new GrpoTrainer(headEngine(await loadOnnxPolicy({ model: 'x', hiddenState: true })), { lr: 0.01 }, { numGenerations: 4 });
  return trainer.config.beta;
}
const options: OnnxPolicyOptions = { model: 'HuggingFaceTB/SmolLM2-135M-Instruct', device: 'auto', dtype: 'q4f16' };
export async function check(): Promise<GroupResult> {
  const policy: Policy = await loadOnnxPolicy(options);
  return policy.generateGroup({ prompt: 'x', groupSize: 2, maxNewTokens: 4, topK: 0, topP: 0.9, minP: 0.05, seed: 1 });
}
`;

const tsc = join(root, 'node_modules/typescript/bin/tsc');
const strict = (resolution: 'nodenext' | 'bundler') => [
  // Every declaration file but TypeScript's own libraries is checked: ours, and whatever ours pull in.
  '--noEmit', '--strict', '--skipLibCheck', 'false', '--skipDefaultLibCheck', '--target', 'es2022', '--lib', 'es2023,dom',
  '--module', resolution === 'bundler' ? 'esnext' : 'nodenext', '--moduleResolution', resolution,
];

describe('npm pack', () => {
  let dir = '';
  let app = '';
  let packed: Packed;
  let installLog = '';
  const repositoryManifest = readFile(join(root, 'package.json'), 'utf8');

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'webgrpo-pack-'));
    packed = await packInto(dir);
    app = join(dir, 'app');
    // transformers.js is an optional peer: a user of webgrpo/onnx installs it next to webgrpo.
    const installed = await installProject(app, [packed.tarball, ...(await Promise.all(['@huggingface/transformers', 'openai', '@types/node'].map(pinned)))]);
    installLog = installed.stdout + installed.stderr;
  }, 400_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('ships dist/ without source maps, a manifest without the repository\'s install policy, and installs without a word about webgrpo', async () => {
    const paths = packed.files;
    expect(paths).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/onnx.js', 'dist/onnx.browser.js', 'dist/math/loss.d.ts', 'README.md', 'docs/installing.md', 'LICENSE', 'python/webgrpo_rewards/webgrpo.py', 'python/webgrpo_rewards/alphabetise.py']));
    expect(paths.filter((p) => p.startsWith('lib/') || p.startsWith('test/') || p.endsWith('.map'))).toEqual([]);
    // Every model the guides call bundled ships, webgrpo-reader and webgrpo-sorter (1.7 MB each) among them.
    for (const model of ['webgrpo-tiny', 'webgrpo-skill', 'webgrpo-reader', 'webgrpo-sorter']) expect(paths).toContain(`public/models/${model}/onnx/model.onnx`);
    expect(packed.manifest).not.toHaveProperty('allowScripts');
    expect(packed.manifest.scripts).not.toHaveProperty('prepare');
    expect(installLog).not.toMatch(/webgrpo@/);
    // Packing worked on a copy: the repository's manifest is as it was.
    expect(await readFile(join(root, 'package.json'), 'utf8')).toBe(await repositoryManifest);
  });

  it('imports from plain Node without loading a model runtime, and runs the API tour as printed', async () => {
    const env = cleanEnv();
    await writeFile(join(app, 'types.ts'), typesCheck);
    await run(process.execPath, [tsc, ...strict('nodenext'), 'types.ts'], { cwd: app, env });
    await writeFile(join(app, 'hooks.mjs'), hooks);
    await writeFile(join(app, 'check.mjs'), check);
    const { stdout } = await run(process.execPath, ['check.mjs'], { cwd: app, env });
    expect(stdout).toMatch(/^webgrpo ok: \d+ exports/);

    // The API tour's first example runs against the installed package and prints what its comments say.
    const tour = await readFile(join(root, 'docs/api-tour.md'), 'utf8');
    const example = /^# A tour of the API[\s\S]*?```js\n([\s\S]*?)```/.exec(tour)?.[1];
    expect(example).toBeDefined();
    const expected = [...example!.matchAll(/\/\/ → (.*)$/gm)].map((m) => m[1].trim());
    expect(expected.length).toBeGreaterThan(3);
    await writeFile(join(app, 'example.mjs'), example!);
    const printed = (await run(process.execPath, ['example.mjs'], { cwd: app, env })).stdout.trim().split('\n');
    expect(printed).toEqual(expected);
  }, 120_000);

  it('answers require() where Node loads ES modules that way, and says it is an ES module where not', async () => {
    const script = "const w = require('webgrpo'); const m = require('webgrpo/math'); const o = require('webgrpo/onnx'); console.log(typeof w.trainingFreeGrpo, typeof m.computeAdvantages, typeof o.loadOnnxPolicy)";
    const requireModule = (process.features as { require_module?: boolean }).require_module === true;
    const result = run(process.execPath, ['-e', script], { cwd: app, env: cleanEnv() });
    if (requireModule) expect((await result).stdout.trim()).toBe('function function function');
    else await expect(result).rejects.toThrow(/ES Module|ERR_REQUIRE_ESM/);
  });

  it('runs webgrpo/onnx in plain Node on the bundled model, offline, and serves it with `webgrpo serve --model webgrpo-tiny`', async () => {
    const env = cleanEnv();
    await writeFile(join(app, 'onnx-types.ts'), onnxTypesCheck);
    await run(process.execPath, [tsc, ...strict('nodenext'), 'onnx-types.ts'], { cwd: app, env });
    await writeFile(join(app, 'onnx-check.mjs'), onnxCheck);
    const { stdout } = await run(process.execPath, ['onnx-check.mjs'], { cwd: app, env });
    const report = JSON.parse(stdout) as { model: string; backend: string; rows: number; maxGap: number; steps: number; adapter: string };
    expect(report.model).toBe(join(app, 'node_modules/webgrpo/public/models/webgrpo-tiny'));
    expect(report).toMatchObject({ backend: 'cpu', rows: 3, steps: 2, adapter: 'webgrpo.adapter' });
    expect(report.maxGap).toBeLessThan(1e-4);

    // The serving guide's command, as a user runs it from the project.
    // Its own process group: npx runs the server as a child, which must end with the test.
    const server = spawn('npx', ['webgrpo', 'serve', '--model', 'webgrpo-tiny', '--port', '0'], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        server.stdout.on('data', (chunk: Buffer) => {
          out += String(chunk);
          const found = /at (http:\/\/\S+)/.exec(out);
          if (found) resolve(found[1]);
        });
        server.stderr.on('data', (chunk: Buffer) => (out += String(chunk)));
        server.once('exit', (code) => reject(new Error(`webgrpo serve exited (${code}): ${out}`)));
      });
      const models = (await (await fetch(new URL('/v1/models', url))).json()) as { data: { id: string }[] };
      expect(models.data.map((m) => m.id)).toEqual(['webgrpo-tiny']);
    } finally {
      const exited = server.exitCode !== null || server.signalCode !== null ? Promise.resolve() : new Promise((done) => server.once('exit', done));
      try {
        process.kill(-server.pid!, 'SIGTERM');
      } catch {
        // The group is already gone.
      }
      await exited;
    }
  }, 120_000);

  it('type-checks every example of the README and docs/ as written, strict, skipLibCheck off, for moduleResolution bundler and nodenext', async () => {
    const examples = await docBlocks();
    expect(examples.length).toBeGreaterThan(10);
    for (const { name, code } of examples) await writeFile(join(app, name), code);
    for (const resolution of ['bundler', 'nodenext'] as const) {
      const checked = run(process.execPath, [tsc, ...strict(resolution), ...examples.map((e) => e.name)], { cwd: app, env: cleanEnv(), maxBuffer: 16 << 20 });
      await expect(checked.then(() => 'clean', (e: { stdout: string }) => e.stdout)).resolves.toBe('clean');
    }
  }, 300_000);

  it("bundles every browser entry for the browser with no node: import (transformers.js left to the app's bundle)", async () => {
    const esbuild = join(root, 'node_modules/.bin/esbuild');
    for (const entry of ['webgrpo', 'webgrpo/math', 'webgrpo/method', 'webgrpo/tasks', 'webgrpo/onnx', 'webgrpo/idb', 'webgrpo/openai', 'webgrpo/grad', 'webgrpo/parquet']) {
      const file = `entry-${entry.replace('/', '-')}.js`;
      await writeFile(join(app, file), `export * from '${entry}';\n`);
      const args = [file, '--bundle', '--platform=browser', '--format=esm', '--external:@huggingface/transformers', '--log-level=error'];
      const { stdout } = await run(esbuild, args, { cwd: app, maxBuffer: 64 << 20 });
      expect(stdout.length, entry).toBeGreaterThan(100);
      expect(stdout.match(/(from|import\(|require\()\s*["'`]node:[\w/]+/g) ?? [], entry).toEqual([]);
    }
  }, 60_000);

  describe.each(['vite', 'webpack', 'esbuild'] as Bundler[])('a page built by %s', (bundler) => {
    let browser: Browser | undefined;
    afterAll(async () => browser?.close());

    it('loads the bundled model on WebAssembly, samples on the page and in threaded workers, and keeps typed errors minified and across a worker', async () => {
      const dist = await buildPage(app, bundler);
      const modules = join(app, 'node_modules');
      const site = await serveStatic({ '/models/': join(modules, 'webgrpo/public/models'), '/ort/': join(modules, 'onnxruntime-web/dist'), '/': dist }, { isolated: true });
      // Another origin answering like the hub: CORS, no Cross-Origin-Resource-Policy header.
      const hub = await serveStatic({ '/webgrpo/webgrpo-tiny/': join(modules, 'webgrpo/public/models/webgrpo-tiny') }, { cors: true });
      try {
        browser = await within(60_000, `${bundler}: launching Chromium`, launchChromium({ webgpu: false }));
        const page = await within(30_000, `${bundler}: opening a page`, browser.newPage());
        // esbuild emits no .wasm: its page passes wasmPaths, as docs/installing.md says.
        const query = new URLSearchParams({ hub: hub.url, ...(bundler === 'esbuild' ? { ort: '/ort/' } : {}) });
        await page.goto(`${site.url}?${query}`);
        await page.waitForFunction(() => (window as { report?: unknown }).report, null, { timeout: 90_000 });
        const report = (await within(30_000, `${bundler}: reading the page's report`, page.evaluate(() => (window as { report?: unknown }).report))) as Record<string, any>;
        expect(report.failed).toBeUndefined();
        expect(report.isolated).toBe(true);
        // The minifier renamed the class; the error still says what it is.
        expect(report.className).not.toBe('InvalidInputError');
        const invalid = { name: 'InvalidInputError', code: 'InvalidInput', argument: 'groupSize', invalidInput: true };
        expect(report.thrown).toMatchObject(invalid);
        expect(report.workerThrown).toMatchObject(invalid);
        const cores = Math.min(16, report.cores as number);
        for (const where of ['page', 'worker', 'hub']) expect(report[where], where).toMatchObject({ rows: 4, finite: true });
        // Threads where onnxruntime's own files are served (wasmPaths); one thread, said why, where its glue is bundled.
        expect(report.worker.threads).toBe(cores);
        if (bundler === 'esbuild') expect(report.page.threads).toBe(cores);
        else expect(report.page).toMatchObject({ threads: 1, threadsNote: expect.stringContaining('wasmPaths') });
        expect(report.missingWasm).toMatchObject({ name: 'ModelLoadError', modelLoad: true, message: expect.stringContaining('/no-such-folder/ort-wasm-simd-threaded.wasm') });
        expect(report.missingWasm.message).toContain('wasmPaths');
        // Nothing was asked for that is not there (the .wasm next to the bundle above all), but the missing folder.
        expect(site.missing.filter((path) => !path.startsWith('/no-such-folder/') && path !== '/favicon.ico')).toEqual([]);
      } finally {
        await within(30_000, `${bundler}: closing the static servers`, Promise.all([site.close(), hub.close()]));
      }
    }, 300_000);
  });
});

/** `work`, or an error naming the phase that did not finish in `ms` (a hang then says where it was, not only that the test timed out). */
function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000} s`)), ms)));
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
