/**
 * Sharing decode steps: a training step's 4 items x G = 8 through `generateGroups` against one
 * group at a time (Node and Chromium WASM), the server under 16 concurrent clients (n = 4) batched
 * against today's queue, and the engine's own cost per decode step against a bare onnxruntime
 * `session.run` loop of the same shapes, all on the bench model.
 */
import { stat } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { AutoModelForCausalLM, Tensor } from '@huggingface/transformers';
import OpenAI from 'openai';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { serve } from '../../lib/server.js';
import { BENCH, BENCH_MODEL_URL, buildModel, MODEL_DIRS } from '../build-model/index.js';
import { inChromium } from './_chromium.js';
import { measureStep, type StepSpec, type StepTiming } from './_batch-measure.js';
import { benchPrompt, measureTransformers, measureWebgrpo, type Measurement } from './_onnx-measure.js';
import { AutoTokenizer } from '@huggingface/transformers';
import { ms } from './_measure.js';

const STEP: StepSpec = { items: 4, groupSize: 8, newTokens: 64, promptTokens: [256, 192, 224, 160] };
const CLIENTS = 16;
const N = 4;
const SERVER_TOKENS = 32;
const OVERHEAD = { rows: 8, prompt: 256, newTokens: 64 };
/** The bench model's weights in onnxruntime-genai's graph (GroupQueryAttention, no position_ids). */
const GENAI_DIR = `${MODEL_DIRS.bench}-genai`;

export async function run(): Promise<string> {
  console.log('  building the bench model (npm run build:model -- --size bench)…');
  await buildModel(BENCH, MODEL_DIRS.bench);
  const policy = await loadOnnxPolicy({ model: MODEL_DIRS.bench });
  try {
    console.log('  Node: a step of 4 items x G = 8, both ways…');
    const node = await measureStep(policy, STEP, 2);
    console.log('  Chromium WASM: the same step…');
    const wasm = await browserStep();
    console.log('  server: 16 concurrent clients, batched and queued…');
    const batched = await serverRun(policy, 64);
    const queued = await serverRun(policy, 1);
    console.log('  engine step against bare session.run…');
    const overhead = await engineOverhead(policy);
    console.log('  genai-style export: generateGroup against transformers.js generate()…');
    const genai = await genaiVersusTransformers();
    return report(node, wasm, batched, queued, overhead, genai);
  } finally {
    await policy.dispose();
  }
}

async function browserStep(): Promise<StepTiming[]> {
  return inChromium('/scripts/bench/pages/batch.html', async (page) => {
    return (await page.evaluate(
      ([m, s]) => (window as unknown as { bench: (...a: unknown[]) => Promise<unknown> }).bench(m, 'wasm', s, 1),
      [BENCH_MODEL_URL, STEP] as const,
    )) as StepTiming[];
  });
}

interface ServerRun {
  ms: number;
  tokens: number;
  latencies: number[];
}

async function serverRun(policy: OnnxPolicy, maxBatched: number): Promise<ServerRun> {
  const server = await serve({ policy, port: 0, host: '127.0.0.1', modelId: 'bench', maxBatched });
  try {
    const client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0, timeout: 600_000 });
    const ask = (i: number) =>
      client.completions.create({ model: 'bench', prompt: `${i} ${benchPrompt(64)}`, n: N, seed: i, max_tokens: SERVER_TOKENS });
    await ask(-1); // warm-up
    const start = performance.now();
    const latencies: number[] = [];
    const responses = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        const t0 = performance.now();
        const response = await ask(i);
        latencies.push(performance.now() - t0);
        return response;
      }),
    );
    const elapsed = performance.now() - start;
    return { ms: elapsed, tokens: responses.reduce((n, r) => n + r.usage!.completion_tokens, 0), latencies: latencies.sort((a, b) => a - b) };
  } finally {
    await server.close();
  }
}

interface Overhead {
  engineMs: number;
  bareMs: number;
  weightBytes: number;
  cacheBytes: number;
}

/**
 * Median decode step of `generateGroup` (time between one row's consecutive tokens: forward pass,
 * sampling, cache bookkeeping) against the median `session.run` of the same [rows, 1] step on
 * the same cache lengths, fed its own outputs back with nothing else around it.
 */
async function engineOverhead(policy: OnnxPolicy): Promise<Overhead> {
  const model = await AutoModelForCausalLM.from_pretrained(MODEL_DIRS.bench);
  const session = (model as unknown as { sessions: { model: BareSession } }).sessions.model;
  const engineSteps: number[] = [];
  const bareSteps: number[] = [];
  // Taking turns, so a busy neighbour slows both alike.
  for (let r = 0; r < 3; r++) {
    engineSteps.push(...(await engineRun(policy, r)));
    bareSteps.push(...(await bareRun(session)));
  }
  await model.dispose();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const { rows, prompt, newTokens } = OVERHEAD;
  const { numLayers, numKvHeads, headDim } = BENCH;
  const weightBytes = (await stat(`${MODEL_DIRS.bench}/onnx/model.onnx`)).size;
  const midLength = prompt + newTokens / 2;
  return { engineMs: median(engineSteps), bareMs: median(bareSteps), weightBytes, cacheBytes: rows * numLayers * 2 * numKvHeads * midLength * headDim * 4 };
}

/** Times between one row's consecutive tokens of a group. */
async function engineRun(policy: OnnxPolicy, seed: number): Promise<number[]> {
  const { rows, prompt, newTokens } = OVERHEAD;
  const steps: number[] = [];
  let last = 0;
  await policy.generateGroup({
    prompt: benchPrompt(prompt),
    groupSize: rows,
    maxNewTokens: newTokens,
    seed,
    onToken: (e) => {
      if (e.row !== 0) return;
      const now = performance.now();
      if (last) steps.push(now - last);
      last = now;
    },
  });
  return steps;
}

/** The same decode steps as bare session.run calls, each fed the previous one's cache. */
async function bareRun(session: BareSession): Promise<number[]> {
  const { rows, prompt, newTokens } = OVERHEAD;
  const { numLayers, numKvHeads, headDim } = BENCH;
  const ort = (type: string, data: BigInt64Array | Float32Array, dims: number[]) => new Tensor(type as 'int64', data, dims).ort_tensor as unknown as OrtLike;
  const steps: number[] = [];
  let past: Record<string, OrtLike> = {};
  for (let i = 0; i < numLayers; i++) {
    for (const kind of ['key', 'value']) past[`past_key_values.${i}.${kind}`] = ort('float32', new Float32Array(0), [rows, numKvHeads, 0, headDim]);
  }
  let length = 0;
  for (let step = 0; step < newTokens; step++) {
    const width = step === 0 ? prompt : 1;
    const feeds: Record<string, OrtLike> = {
      ...past,
      input_ids: ort('int64', new BigInt64Array(rows * width).fill(40n), [rows, width]),
      attention_mask: ort('int64', new BigInt64Array(rows * (length + width)).fill(1n), [rows, length + width]),
      position_ids: ort('int64', BigInt64Array.from({ length: rows * width }, (_, k) => BigInt(length + (k % width))), [rows, width]),
    };
    const t0 = performance.now();
    const out = await session.run(feeds);
    if (step > 1) steps.push(performance.now() - t0);
    out.logits.dispose();
    for (const tensor of Object.values(past)) tensor.dispose();
    past = {};
    for (let i = 0; i < numLayers; i++) for (const kind of ['key', 'value']) past[`past_key_values.${i}.${kind}`] = out[`present.${i}.${kind}`];
    length += width;
  }
  for (const tensor of Object.values(past)) tensor.dispose();
  return steps;
}

/** The onnx section's comparison (G = 8, 256-token prompt, 64 new tokens) on the genai-style export. */
async function genaiVersusTransformers(): Promise<{ info: string; ours: Measurement; theirs: Measurement }> {
  await buildModel({ ...BENCH, graph: 'genai' }, GENAI_DIR);
  const prompt = benchPrompt(256);
  const policy = await loadOnnxPolicy({ model: GENAI_DIR });
  const [tokenizer, model] = await Promise.all([AutoTokenizer.from_pretrained(GENAI_DIR), AutoModelForCausalLM.from_pretrained(GENAI_DIR)]);
  try {
    const promptIds = tokenizer.encode(prompt, { add_special_tokens: false });
    const c = { groupSize: 8, newTokens: 64, seed: 1 };
    await measureWebgrpo(policy, prompt, { ...c, newTokens: 4 });
    await measureTransformers(model, Tensor, promptIds, { ...c, newTokens: 4 });
    let ours: Measurement | undefined;
    let theirs: Measurement | undefined;
    for (let r = 0; r < 2; r++) {
      const a = await measureWebgrpo(policy, prompt, c);
      const b = await measureTransformers(model, Tensor, promptIds, c);
      if (!ours || a.totalMs < ours.totalMs) ours = a;
      if (!theirs || b.totalMs < theirs.totalMs) theirs = b;
    }
    return { info: `passMode ${policy.info.passMode}, batchMode ${policy.info.batchMode}`, ours: ours!, theirs: theirs! };
  } finally {
    await policy.dispose();
    await model.dispose();
  }
}

interface OrtLike {
  dispose(): void;
}
interface BareSession {
  run(feeds: Record<string, OrtLike>): Promise<Record<string, OrtLike>>;
}

function report(node: StepTiming[], wasm: StepTiming[], batched: ServerRun, queued: ServerRun, o: Overhead, genai: { info: string; ours: Measurement; theirs: Measurement }): string {
  const genaiRow = (label: string, m: Measurement) =>
    `| Node, CPU, genai-style export | ${label} | ${ms(m.prefillMs)} ms | ${ms(m.totalMs)} ms | ${m.tokens} | ${m.tokensPerSecond.toFixed(1)} | **${(m.tokensPerSecond / genai.theirs.tokensPerSecond).toFixed(2)}x** |`;
  const stepRows = (runtime: string, [together, apart]: StepTiming[]) => [
    `| ${runtime} | \`generateGroups\` | ${ms(together.ms)} ms | ${together.tokens} | ${together.tokensPerSecond.toFixed(1)} | **${(together.tokensPerSecond / apart.tokensPerSecond).toFixed(2)}x** |`,
    `| ${runtime} | one \`generateGroup\` after another | ${ms(apart.ms)} ms | ${apart.tokens} | ${apart.tokensPerSecond.toFixed(1)} | 1.00x |`,
  ];
  const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
  const serverRow = (label: string, r: ServerRun, base: ServerRun) =>
    `| ${label} | ${ms(r.ms)} ms | ${((r.tokens / r.ms) * 1000).toFixed(1)} | ${ms(pct(r.latencies, 50))} ms | ${ms(pct(r.latencies, 99))} ms | **${((r.tokens / r.ms) / (base.tokens / base.ms)).toFixed(2)}x** |`;
  const gbps = (bytes: number, msPerStep: number) => (bytes / (msPerStep / 1000) / 1e9).toFixed(1);
  return `## batch: many groups in one batch, and the engine's own cost

Bench model (as in the onnx section: ${BENCH.numLayers} layers, fp32, vocabulary 8192, no end token, so every row runs to the token
limit). Both ways produce the same groups (test/onnx/batch.test.ts); only the time differs.

A training step's sampling: ${STEP.items} items x G = ${STEP.groupSize}, prompts of ${STEP.promptTokens.join(' / ')} tokens, ${STEP.newTokens} new tokens.
\`generateGroups\` prefills each prompt once and decodes all ${STEP.items * STEP.groupSize} rows together; the alternative samples
the items' groups one after another (each already batched over its G rows). Fastest of 2 runs in Node, 1 in
Chromium, after a warm-up.

| Runtime | Sampling | Total | Tokens | Tokens/s | Speed-up |
| --- | --- | ---: | ---: | ---: | ---: |
${[...stepRows('Node, CPU', node), ...stepRows('Chromium, WASM', wasm)].join('\n')}

The server under ${CLIENTS} concurrent official \`openai\` clients, each a legacy completion with n = ${N}, up to
${SERVER_TOKENS} new tokens, on the bench model: batched (requests share decode steps, joining between
steps) against the queue (\`maxBatched: 1\`, one generation at a time, as before). Latency is per request,
from sending to the whole response.

| Server | Wall time | Tokens/s | p50 latency | p99 latency | Throughput |
| --- | ---: | ---: | ---: | ---: | ---: |
${[serverRow('batched', batched, queued), serverRow('queued', queued, queued)].join('\n')}

One decode step of G = ${OVERHEAD.rows} rows (${OVERHEAD.prompt}-token prompt, ${OVERHEAD.newTokens} new tokens, median step of 3 runs each, taking turns, Node CPU):

| | Per step | Engine overhead |
| --- | ---: | ---: |
| webgrpo \`generateGroup\` (forward, sampling, cache bookkeeping) | ${ms(o.engineMs)} ms | **${(((o.engineMs - o.bareMs) / o.bareMs) * 100).toFixed(1)}%** |
| bare onnxruntime \`session.run\` of the same shapes | ${ms(o.bareMs)} ms | |

Against the memory limit: a step reads the ${(o.weightBytes / 2 ** 20).toFixed(0)} MiB of weights and about
${(o.cacheBytes / 2 ** 20).toFixed(1)} MiB of cache (at the middle length), ${((o.weightBytes + o.cacheBytes) / 2 ** 20).toFixed(0)} MiB in all: ${gbps(o.weightBytes + o.cacheBytes, o.engineMs)} GB/s at the engine's
step time, ${gbps(o.weightBytes + o.cacheBytes, o.bareMs)} GB/s for the bare run.

The onnx section's comparison on the bench model's weights exported in onnxruntime-genai's style
(\`graph: 'genai'\` in the builder: GroupQueryAttention with rotary inside and \`seqlens_k\` from the mask,
SkipSimplifiedLayerNormalization, no \`position_ids\`; webgrpo reports ${genai.info}). G = 8, 256-token
prompt, 64 new tokens, both sides with log-probs, fastest of 2 runs taking turns:

| Runtime | Implementation | Prefill | Total | Tokens | Tokens/s | Speed-up |
| --- | --- | ---: | ---: | ---: | ---: | ---: |
${[genaiRow('webgrpo `generateGroup`', genai.ours), genaiRow('transformers.js `generate()` + scoring pass', genai.theirs)].join('\n')}`;
}
