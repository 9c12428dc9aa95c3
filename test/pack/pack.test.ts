/**
 * The published artefact, tested as a user gets it: `npm pack` (which runs `prepare`, i.e. the
 * library build), install the tarball into an empty folder, and import 'webgrpo' from a plain
 * Node ESM script. A resolve hook in that script refuses onnxruntime and transformers.js, so the
 * import fails if the core ever pulls them in. The README's example runs there too.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

/** The environment without the npm_* variables of an enclosing `npm test`, which would point npm at this repo. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ONNXRUNTIME_NODE_INSTALL: 'skip' };
  for (const [key, value] of Object.entries(process.env)) if (!/^npm_/i.test(key)) env[key] = value;
  return env;
}

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

const close = (a, b, tol = 1e-12) => assert.ok(Math.abs(a - b) <= tol, a + ' != ' + b);
const adv = w.computeAdvantages([1, 0, 0, 1], { groupSize: 4 });
const s = Math.sqrt(1 / 3);
adv.advantages.forEach((a, i) => close(a, (i === 0 || i === 3 ? 0.5 : -0.5) / (s + 1e-4)));

const loss = w.grpoLoss({ logps: [[-1, -2]], oldLogps: [[-1.3, -2]], advantages: [1], mask: [[1, 1]] }, { lossType: 'grpo' });
close(loss.loss, -(1.2 + 1) / 2);
assert.deepEqual(loss.grad, [[0, -0.5]]);
close(loss.metrics.clipRatioHigh, 0.5);

// TRL's newer objectives and corrections, through the public entry.
const sampled = { logps: [[-1, -2], [-1, -1]], samplingLogps: [[-2.6, -2.6], [-1, -1.1]], advantages: [1, -1], mask: [[1, 1], [1, 0]], entropies: [[0.1, 0.5], [0.9, 0]] };
close(w.grpoLoss({ logps: [[-1]], oldLogps: [[-1.5]], advantages: [2], mask: [[1]] }, { lossType: 'cispo', epsilonHigh: 1.2 }).loss, 2.4);
close(w.grpoLoss({ logps: [[-1]], advantages: [3], mask: [[1]] }, { lossType: 'sapo' }).loss, -6);
close(w.grpoLoss({ logps: [[-1, -2]], advantages: [0.5], mask: [[1, 1]] }, { lossType: 'vespo' }).metrics.vespoPhiMean, 1);
close(w.grpoLoss({ logps: [[-1, -1, -1]], advantages: [1], mask: [[1, 1, 1]] }, { lossType: 'luspo', importanceSamplingLevel: 'sequence' }).loss, -3);
const corrected = w.grpoLoss(sampled, { importanceSampling: { mode: 'sequence_mask' }, offPolicyMaskThreshold: 0.5, topEntropyQuantile: 0.5, biasCorrectedKl: true });
assert.equal(corrected.metrics.importanceSamplingRatio.min, 0);
assert.ok(Number.isFinite(corrected.loss) && corrected.grad.length === 2);
assert.deepEqual(w.samplingCorrection({ topK: 20 }, 1), { mode: 'sequence_mask', clipMax: 3 });
assert.equal(w.samplingCorrection({ topK: 0 }, 1), undefined);
close(w.nextAdaptiveEntropy({ coef: 0.01 }, 0.1, w.resolveAdaptiveEntropy({})).coef, 0.015);
assert.deepEqual([...w.LOSS_TYPES], ['grpo', 'bnpo', 'dr_grpo', 'dapo', 'cispo', 'sapo', 'luspo', 'vespo']);
assert.throws(() => w.grpoLoss(sampled, { lossType: 'vespo', importanceSampling: { mode: 'sequence_mask' } }), (e) => e instanceof w.InvalidInputError && e.argument === 'importanceSampling.mode');

const lp = w.tokenLogProbs({ logits: new Float32Array([0, 0, 0, 0]), dims: [1, 1, 4], ids: [2] });
close(lp.logps[0], -Math.log(4));
close(lp.entropy[0], Math.log(4));

const router = new w.GrpoRouter({ seed: 1 });
assert.ok(['a', 'b'].includes(router.route('hello', ['a', 'b'])));
assert.throws(() => w.computeAdvantages([1, 2, 3], { groupSize: 2 }), (e) => e instanceof w.InvalidInputError && e.argument === 'groupSize');

// webgrpo/parquet loads its writer from the installed package, and refuses a run with no group.
const { exportParquet } = await import('webgrpo/parquet');
const emptyRun = { run: { id: 'r', kind: 'gradient', config: {} }, items: [], steps: [], pending: [] };
assert.throws(() => exportParquet(emptyRun), (e) => e instanceof w.InvalidInputError && e.argument === 'run');
console.log('webgrpo ok: ' + Object.keys(w).length + ' exports');
`;

const typesCheck = `
import { computeAdvantages, grpoLoss, InvalidInputError, samplingCorrection, type AdaptiveEntropyState, type AdvantageResult, type GrpoLossConfig, type ImportanceSamplingMode, type ImportanceSamplingOptions, type RatioSummary, type SamplingSettings } from 'webgrpo';
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
const { digits } = await import('webgrpo');
const trainable = await loadOnnxPolicy({ model, hiddenState: true });
const trained = await gradientGrpo({ policy: trainable, dataset: digits.dataset({ size: 4 }), rewards: digits.rewards, groupSize: 4, batchSize: 2, maxNewTokens: 6 }).result();
await trainable.dispose();
console.log(JSON.stringify({ model, backend: policy.info.backend, rows: group.completions.length, maxGap, steps: trained.stepsCompleted, adapter: trained.adapter.format }));
`;

const onnxTypesCheck = `
import { loadOnnxPolicy, type OnnxPolicyOptions } from 'webgrpo/onnx';
import { GrpoTrainer, rolloutSampling, type TrainStepMetrics, type TrainStepOptions } from 'webgrpo/grad';
export const stepOptions: TrainStepOptions = { sampling: { topK: 20 }, ...rolloutSampling([{ completions: [{ tokenIds: [1], logprobs: [-1], finishReason: 'length' }], rewards: [1] }]) };
export const ratioMax: number | undefined = ({} as TrainStepMetrics).importanceSamplingRatio?.max;
import type { GroupResult, Policy } from 'webgrpo';
export async function train(): Promise<TrainStepMetrics['loss']> {
  const trainer = new GrpoTrainer(await loadOnnxPolicy({ model: 'x', hiddenState: true }), { lr: 0.01 }, { numGenerations: 4 });
  return trainer.config.beta;
}
const options: OnnxPolicyOptions = { model: 'HuggingFaceTB/SmolLM2-135M-Instruct', device: 'auto', dtype: 'q4f16' };
export async function check(): Promise<GroupResult> {
  const policy: Policy = await loadOnnxPolicy(options);
  return policy.generateGroup({ prompt: 'x', groupSize: 2, maxNewTokens: 4, topK: 0, topP: 0.9, minP: 0.05, seed: 1 });
}
`;

describe('npm pack', () => {
  let dir = '';
  let app = '';
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('installs into an empty folder and imports from plain Node without loading a model runtime', async () => {
    dir = await mkdtemp(join(tmpdir(), 'webgrpo-pack-'));
    const env = cleanEnv();
    const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: root, env, maxBuffer: 16 << 20 });
    const [{ filename, files }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as {
      filename: string;
      files: { path: string }[];
    }[];
    const paths = files.map((f) => f.path);
    expect(paths).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/math/loss.d.ts', 'README.md', 'LICENSE']));
    expect(paths.some((p) => p.startsWith('lib/') || p.startsWith('test/'))).toBe(false);

    app = join(dir, 'app');
    await run('mkdir', [app]);
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'pack-check', private: true, type: 'module' }));
    await run('npm', ['install', join(dir, filename), '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app, env });
    // The declarations resolve through the exports map: a strict type-check of a consumer file.
    await writeFile(join(app, 'types.ts'), typesCheck);
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const flags = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', 'types.ts'];
    await run(process.execPath, [tsc, ...flags], { cwd: app, env });

    await writeFile(join(app, 'hooks.mjs'), hooks);
    await writeFile(join(app, 'check.mjs'), check);
    const { stdout } = await run(process.execPath, ['check.mjs'], { cwd: app, env });
    expect(stdout).toMatch(/^webgrpo ok: \d+ exports/);

    // The README's example runs against the installed package and prints what its comments say.
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    const example = /## A tour of the API[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(example).toBeDefined();
    const expected = [...example!.matchAll(/\/\/ → (.*)$/gm)].map((m) => m[1].trim());
    expect(expected.length).toBeGreaterThan(3);
    await writeFile(join(app, 'example.mjs'), example!);
    const printed = (await run(process.execPath, ['example.mjs'], { cwd: app, env })).stdout.trim().split('\n');
    expect(printed).toEqual(expected);
  }, 240_000);

  it('runs webgrpo/onnx from the installed package in plain Node, on the bundled model, offline', async () => {
    expect(app, 'runs in the folder the previous test installed into').not.toBe('');
    const env = cleanEnv();
    // transformers.js is an optional peer: a user of webgrpo/onnx installs it next to webgrpo.
    const transformers = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')).devDependencies['@huggingface/transformers'];
    await run('npm', ['install', `@huggingface/transformers@${transformers}`, '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app, env });
    await writeFile(join(app, 'onnx-types.ts'), onnxTypesCheck);
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const flags = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--skipLibCheck', 'onnx-types.ts'];
    await run(process.execPath, [tsc, ...flags], { cwd: app, env });
    await writeFile(join(app, 'onnx-check.mjs'), onnxCheck);
    const { stdout } = await run(process.execPath, ['onnx-check.mjs'], { cwd: app, env });
    const report = JSON.parse(stdout) as { model: string; backend: string; rows: number; maxGap: number; steps: number; adapter: string };
    expect(report.model).toBe(join(app, 'node_modules/webgrpo/public/models/webgrpo-tiny'));
    expect(report).toMatchObject({ backend: 'cpu', rows: 3, steps: 2, adapter: 'webgrpo.adapter' });
    expect(report.maxGap).toBeLessThan(1e-4);
  }, 240_000);
});
