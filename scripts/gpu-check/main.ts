/**
 * The GPU check (issue 41): onnxruntime-web's WebGPU execution provider against its WebAssembly one
 * on the same machine, through webgrpo's browser entry, in Node with Dawn as the WebGPU
 * implementation. Runs from the folder `npm run gpu-check:pack` writes (this file bundled as
 * check.mjs, beside page.mjs, onnxruntime-web's runtime files and Dawn's binding):
 *
 *   node check.mjs [--shape smollm2-135m | --model <folder>] [--group 8] [--tokens 128] [--steps 3] [--out <dir>] [--require-hardware]
 *
 * Builds the model of the hub shape if it is not there (scripts/build-model, random weights, fp32,
 * into build/models/hub-shape/<shape>), then one process per backend (`child` below): WebGPU samples
 * the group, both backends score it and take LoRA steps on it, and the two are compared. Writes
 * webgpu.json, wasm.json (each backend's whole result), gpu-check.json (the summary and verdict)
 * and gpu-check.md (the table) into --out. Exits 0 when everything ran and agreed, 1 when not, 2
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
import { buildModel, MODEL_FILES } from '../build-model/index.js';
import { hubShapeSpec } from '../bench/_hub-shapes.js';
import { runBackend, type BackendResult, type Sequences } from './backend.js';
import { agreementOf, markdown, passed } from './report.js';

const here = fileURLToPath(new URL('.', import.meta.url));
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
    result = await runBackend({ backend, model: resolve(values.model!), G: Number(values.group), T: Number(values.tokens), loraSteps: Number(values.steps), ortDir: fileURLToPath(new URL('./ort/', import.meta.url)), sequences, log });
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

function runChild(args: string[]): Promise<number> {
  return new Promise((done, fail) => {
    const proc = spawn(process.execPath, ['--import', new URL('./page.mjs', import.meta.url).href, fileURLToPath(import.meta.url), 'child', ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
    proc.on('error', fail);
    proc.on('exit', (code, signal) => done(code ?? (signal ? 128 : 1)));
  });
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
      out: { type: 'string', default: process.env.OUT || join(here, 'out') },
      'require-hardware': { type: 'boolean', default: false },
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
  const common = ['--model', model, '--group', values.group!, '--tokens', values.tokens!, '--steps', values.steps!];
  const results: BackendResult[] = [];
  const gpuFile = join(out, 'webgpu.json');
  log('webgpu: starting');
  await runChild(['--backend', 'webgpu', '--result', gpuFile, ...common, ...(values['require-hardware'] ? ['--require-hardware'] : [])]);
  const gpu = existsSync(gpuFile) ? (JSON.parse(await readFile(gpuFile, 'utf8')) as BackendResult) : { backend: 'webgpu' as const, peakRssBytes: 0, errors: [{ phase: 'process', message: 'the WebGPU process wrote no result (it crashed: see the log above)' }] };
  results.push(gpu);
  const noHardware = gpu.errors.some((e) => e.phase === 'adapter');
  if (!noHardware) {
    const wasmFile = join(out, 'wasm.json');
    log('wasm: starting');
    await runChild(['--backend', 'wasm', '--result', wasmFile, ...common, ...(gpu.sampled ? ['--sequences', gpuFile] : [])]);
    results.push(existsSync(wasmFile) ? (JSON.parse(await readFile(wasmFile, 'utf8')) as BackendResult) : { backend: 'wasm', peakRssBytes: 0, errors: [{ phase: 'process', message: 'the WASM process wrote no result (it crashed: see the log above)' }] });
  }
  const agreement = results.length === 2 ? agreementOf(results[0], results[1]) : {};
  const ok = passed(agreement, results);
  const machine = { gpu: await gpuName(), cpu: cpus()[0]?.model, cores: availableParallelism(), memoryBytes: totalmem(), node: process.versions.node, platform: `${process.platform}-${process.arch}` };
  const sampled = gpu.sample;
  const context = [
    `Model: ${values.model ? model : `${values.shape} shape, random weights`}, fp32 (${(modelBytes / 2 ** 20).toFixed(0)} MiB${buildMs !== undefined ? `, built here in ${(buildMs / 1000).toFixed(0)} s` : ''}). ` +
      `Group: ${values.group} x ${values.tokens} new tokens${sampled ? ` (${sampled.tokens} sampled on WebGPU)` : ''}; LoRA rank 8 on every projection, ${values.steps} steps through GrpoTrainer on loraEngine (beta 0), the training graphs on the same execution provider as the sampler.`,
    `Machine: ${machine.gpu ?? 'no nvidia-smi'}; ${machine.cpu ?? '?'} (${machine.cores} cores); Node ${machine.node}. Wall-clock times; each backend in a process of its own, one after the other.`,
  ];
  const title = `gpu-check: WebGPU against WASM, ${new Date().toISOString().slice(0, 10)}`;
  await writeFile(join(out, 'gpu-check.json'), JSON.stringify({ ok, machine, model: { path: model, bytes: modelBytes, buildMs }, G: Number(values.group), T: Number(values.tokens), wallMs: performance.now() - started, agreement, results: results.map(({ sampled: _s, scoring, ...r }) => ({ ...r, ...(scoring ? { scoring: { on: scoring.on, ms: scoring.ms, firstMs: scoring.firstMs } } : {}) })) }, null, 1));
  const table = markdown(title, context, results, agreement, ok);
  await writeFile(join(out, 'gpu-check.md'), table);
  console.log(`\n${table}`);
  process.exit(noHardware ? 2 : ok ? 0 : 1);
}

await main();
