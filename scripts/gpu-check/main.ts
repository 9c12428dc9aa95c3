/**
 * The GPU check (issue 41): onnxruntime-web's WebGPU execution provider against its WebAssembly one
 * on the same machine, through webgrpo's browser entry, in Node with Dawn as the WebGPU
 * implementation. Runs from the folder `npm run gpu-check:pack` writes (this file bundled as
 * check.mjs, beside page.mjs, onnxruntime-web's runtime files and Dawn's binding):
 *
 *   node check.mjs [--shape smollm2-135m | --model <folder>] [--group 8] [--tokens 128] [--steps 3] [--out <dir>]
 *                  [--require-hardware] [--backend-limit-s 170] [--genai-limit-s 40] [--skip-genai]
 *
 * The limits end a backend's process (its measurements so far kept) so that the whole check, two
 * pairs of processes, ends inside a device call of 480 s: 2 x 170 + 2 x 40 s and the unpacking.
 *
 * Builds the model of the hub shape if it is not there (scripts/build-model, random weights, fp32,
 * into build/models/hub-shape/<shape>), then one process per backend (`child` below): WebGPU samples
 * the group, both backends score it and take LoRA steps on it, and the two are compared. Writes
 * webgpu.json, wasm.json (each backend's whole result), gpu-check.json (the summary and verdict)
 * and gpu-check.md (the tables) into --out; then the same on the tiny model's shape in
 * onnxruntime-genai's layout (webgpu-genai.json, wasm-genai.json; --skip-genai leaves it out). Exits 0 when everything ran and agreed, 1 when not, 2
 * when --require-hardware finds no hardware WebGPU adapter.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildModel, MODEL_FILES, TINY } from '../build-model/index.js';
import { hubShapeSpec } from '../bench/_hub-shapes.js';
import { runBackend, type BackendResult, type Sequences } from './backend.js';
import { agreementOf, markdown, passed, type Agreement } from './report.js';

const log = (line: string) => console.log(`[gpu-check ${new Date().toISOString().slice(11, 19)}] ${line}`);

async function child(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { backend: { type: 'string' }, model: { type: 'string' }, group: { type: 'string' }, tokens: { type: 'string' }, steps: { type: 'string' }, sequences: { type: 'string' }, result: { type: 'string' }, 'require-hardware': { type: 'boolean' } } });
  const backend = values.backend === 'webgpu' ? 'webgpu' : 'wasm';
  const sequences = values.sequences ? ((JSON.parse(await readFile(values.sequences, 'utf8')) as BackendResult).sampled as Sequences) : undefined;
  let result: BackendResult;
  if (backend === 'webgpu' && values['require-hardware'] && !(await hardwareAdapter())) {
    result = { backend, peakRssBytes: 0, errors: [{ phase: 'adapter', message: 'no hardware WebGPU adapter (Dawn found none, or only a software one): is the Vulkan loader and the GPU driver\'s ICD there?' }] };
  } else {
    // Paths on the page's origin are the machine's files (page-origin.ts).
    result = await runBackend({ backend, model: resolve(values.model!), G: Number(values.group), T: Number(values.tokens), loraSteps: Number(values.steps), ortDir: fileURLToPath(new URL('./ort/', import.meta.url)), sequences, log, save: (partial) => writeFile(values.result!, JSON.stringify(partial)) });
  }
  await writeFile(values.result!, JSON.stringify(result));
  // Dawn's device keeps the event loop alive.
  process.exit(0);
}

async function hardwareAdapter(): Promise<boolean> {
  const { isSoftwareAdapter } = await import('../../lib/onnx.browser.js');
  const gpu = (globalThis.navigator as unknown as { gpu?: { requestAdapter(): Promise<Parameters<typeof isSoftwareAdapter>[0] | null> } }).gpu;
  const adapter = await gpu?.requestAdapter();
  return !!adapter && !isSoftwareAdapter(adapter);
}

/** One backend's process, ended after `limitS` seconds so that the other backend and the summary still run inside the device call's limit. */
function runChild(args: string[], limitS: number): Promise<'done' | 'timed out'> {
  return new Promise((done, fail) => {
    const proc = spawn(process.execPath, ['--import', new URL('./page.mjs', import.meta.url).href, fileURLToPath(import.meta.url), 'child', ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      proc.kill('SIGKILL');
    }, limitS * 1000);
    proc.on('error', fail);
    proc.on('exit', () => {
      clearTimeout(timer);
      done(timedOut ? 'timed out' : 'done');
    });
  });
}

/** A backend's result file, or why there is none. */
async function readResult(file: string, backend: 'webgpu' | 'wasm', ended: 'done' | 'timed out', limitS: number): Promise<BackendResult> {
  const saved = existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as BackendResult) : undefined;
  if (ended === 'timed out') {
    const result = saved ?? { backend, peakRssBytes: 0, errors: [] };
    result.errors.push({ phase: 'process', message: `the ${backend} process ran past its ${limitS} s limit and was ended; what it measured before is kept` });
    return result;
  }
  return saved ?? { backend, peakRssBytes: 0, errors: [{ phase: 'process', message: `the ${backend} process wrote no result (it crashed: see the log above)` }] };
}

async function gpuName(): Promise<string | undefined> {
  return new Promise((done) => {
    const proc = spawn('nvidia-smi', ['--query-gpu=name,driver_version,memory.total', '--format=csv,noheader'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let text = '';
    proc.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    proc.on('error', () => done(undefined));
    proc.on('exit', () => done(text.trim() || undefined));
  });
}

interface PairOptions {
  label: string;
  model: string;
  group: string;
  tokens: string;
  steps: string;
  out: string;
  limitS: number;
  requireHardware: boolean;
}

interface Pair {
  results: BackendResult[];
  agreement: Agreement;
  ok: boolean;
  noHardware: boolean;
}

/** Both backends on one model: WebGPU samples, then WASM scores and trains on WebGPU's sample. Result files `webgpu<label>.json`, `wasm<label>.json`. */
async function runPair(o: PairOptions): Promise<Pair> {
  const common = ['--model', o.model, '--group', o.group, '--tokens', o.tokens, '--steps', o.steps];
  const results: BackendResult[] = [];
  const gpuFile = join(o.out, `webgpu${o.label}.json`);
  log(`webgpu${o.label}: starting`);
  const gpuEnded = await runChild(['--backend', 'webgpu', '--result', gpuFile, ...common, ...(o.requireHardware ? ['--require-hardware'] : [])], o.limitS);
  const gpu = await readResult(gpuFile, 'webgpu', gpuEnded, o.limitS);
  results.push(gpu);
  const noHardware = gpu.errors.some((e) => e.phase === 'adapter');
  if (!noHardware) {
    const wasmFile = join(o.out, `wasm${o.label}.json`);
    log(`wasm${o.label}: starting`);
    const wasmEnded = await runChild(['--backend', 'wasm', '--result', wasmFile, ...common, ...(gpu.sampled ? ['--sequences', gpuFile] : [])], o.limitS);
    results.push(await readResult(wasmFile, 'wasm', wasmEnded, o.limitS));
  }
  const agreement = results.length === 2 ? agreementOf(results[0], results[1]) : {};
  return { results, agreement, ok: passed(agreement, results), noHardware };
}

/** A pair's summary without the token arrays (they are in its result files). */
function summary(pair: Pair): unknown {
  return { ok: pair.ok, agreement: pair.agreement, results: pair.results.map(({ sampled: _s, scoring, ...r }) => ({ ...r, ...(scoring ? { scoring: { on: scoring.on, ms: scoring.ms, firstMs: scoring.firstMs } } : {}) })) };
}

async function main(): Promise<void> {
  const [mode, ...rest] = process.argv.slice(2);
  if (mode === 'child') return child(rest);
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      shape: { type: 'string', default: 'smollm2-135m' },
      model: { type: 'string' },
      group: { type: 'string', default: '8' },
      tokens: { type: 'string', default: '128' },
      steps: { type: 'string', default: '3' },
      out: { type: 'string', default: process.env.OUT || 'build/gpu-check' },
      'require-hardware': { type: 'boolean', default: false },
      'backend-limit-s': { type: 'string', default: '170' },
      'genai-limit-s': { type: 'string', default: '40' },
      'skip-genai': { type: 'boolean', default: false },
    },
  });
  const out = resolve(values.out!);
  await mkdir(out, { recursive: true });
  const started = performance.now();
  let model = values.model ? resolve(values.model) : undefined;
  let buildMs: number | undefined;
  if (!model) {
    const { spec, dir } = await hubShapeSpec(values.shape!, 'fp32');
    model = resolve(dir);
    if (!existsSync(join(model, MODEL_FILES.fp32))) {
      log(`building ${values.shape} (fp32, random weights) into ${model}`);
      const t = performance.now();
      await buildModel(spec, model);
      buildMs = performance.now() - t;
      log(`built in ${(buildMs / 1000).toFixed(1)} s`);
    }
  }
  const modelBytes = (await stat(join(model, MODEL_FILES.fp32))).size;
  const limitS = Number(values['backend-limit-s']);
  const requireHardware = values['require-hardware']!;
  const main = await runPair({ label: '', model, group: values.group!, tokens: values.tokens!, steps: values.steps!, out, limitS, requireHardware });
  // The other export layout the hub has (onnxruntime-genai's: GroupQueryAttention with the rotary
  // embedding inside, from precomputed tables), on the tiny model's shape: seconds on any backend.
  let genai: Pair | undefined;
  if (!values['skip-genai'] && !main.noHardware) {
    const dir = resolve('build/models/gpu-check-tiny-genai');
    if (!existsSync(join(dir, MODEL_FILES.fp32))) await buildModel({ ...TINY, graph: 'genai' }, dir);
    genai = await runPair({ label: '-genai', model: dir, group: '4', tokens: '16', steps: '2', out, limitS: Number(values['genai-limit-s']), requireHardware });
  }
  const ok = main.ok && (genai?.ok ?? true);
  const machine = { gpu: await gpuName(), cpu: cpus()[0]?.model, cores: availableParallelism(), memoryBytes: totalmem(), node: process.versions.node, platform: `${process.platform}-${process.arch}` };
  const sampled = main.results[0].sample;
  const context = [
    `Model: ${values.model ? model : `${values.shape} shape, random weights`}, fp32 (${(modelBytes / 2 ** 20).toFixed(0)} MiB${buildMs !== undefined ? `, built here in ${(buildMs / 1000).toFixed(0)} s` : ''}). ` +
      `Group: ${values.group} x ${values.tokens} new tokens${sampled ? ` (${sampled.tokens} sampled on WebGPU)` : ''}; LoRA rank 8 on every projection, ${values.steps} steps through GrpoTrainer on loraEngine (beta 0), the training graphs on the same execution provider as the sampler.`,
    `Machine: ${machine.gpu ?? 'no nvidia-smi'}; ${machine.cpu ?? '?'} (${machine.cores} cores); Node ${machine.node}. Wall-clock times; each backend in a process of its own, one after the other.`,
  ];
  const date = new Date().toISOString().slice(0, 10);
  const tables = [markdown(`gpu-check: WebGPU against WASM, ${date}`, context, main.results, main.agreement, main.ok)];
  if (genai) {
    tables.push(markdown('The onnxruntime-genai layout (GroupQueryAttention, rotary tables inside), the tiny model\'s shape', ['4 x 16 new tokens, 2 LoRA steps, the same comparisons.'], genai.results, genai.agreement, genai.ok));
  }
  await writeFile(join(out, 'gpu-check.json'), JSON.stringify({ ok, machine, model: { path: model, bytes: modelBytes, buildMs }, G: Number(values.group), T: Number(values.tokens), wallMs: performance.now() - started, main: summary(main), ...(genai ? { genai: summary(genai) } : {}) }, null, 1));
  const text = `${tables.join('\n')}\nOverall: **${ok ? 'pass' : 'FAIL'}** (${((performance.now() - started) / 1000).toFixed(0)} s).\n`;
  await writeFile(join(out, 'gpu-check.md'), text);
  console.log(`\n${text}`);
  process.exit(main.noHardware ? 2 : ok ? 0 : 1);
}

await main();
