/**
 * Where `generateGroup`'s time goes at a hub shape: one group sampled with the decoder's session
 * runs (the prefill and each decode step), the draws from the logits, the cache copies and the
 * rest of the decoder's own work timed apart, in CPU time (user + system of every thread) and
 * wall time, with the garbage collector's pauses; then one decode step of G rows run directly on
 * onnxruntime at a short and at the group's cache length, with onnxruntime's thread spinning on
 * (its default, what transformers.js uses) and off (webgrpo's sampler in Node). Prints one JSON line.
 *
 *   tsx scripts/bench/_sample-profile.ts <model dir> <G> <prompt tokens> <new tokens>
 *
 * The timers wrap the policy's decoder from outside (its parts are private to the library), so
 * the group sampled is the one `generateGroup` samples without them.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import * as ort from 'onnxruntime-node';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { benchPrompt } from './_onnx-measure.js';

interface Timed {
  n: number;
  wallMs: number;
  cpuMs: number;
}

type Method = (...args: never[]) => unknown;

const [dir, groupArg, promptArg, newArg] = process.argv.slice(2);
const G = Number(groupArg);
const promptTokens = Number(promptArg);
const newTokens = Number(newArg);

const timers: Record<string, Timed> = {};
function timeInto(label: string | ((args: unknown[]) => string), target: Record<string, unknown>, method: string): void {
  const original = (target[method] as Method).bind(target) as (...args: unknown[]) => unknown;
  target[method] = (...args: unknown[]) => {
    const wall = performance.now();
    const cpu = process.cpuUsage();
    const done = <T>(value: T): T => {
      const used = process.cpuUsage(cpu);
      const t = (timers[typeof label === 'string' ? label : label(args)] ??= { n: 0, wallMs: 0, cpuMs: 0 });
      t.n++;
      t.wallMs += performance.now() - wall;
      t.cpuMs += (used.user + used.system) / 1000;
      return value;
    };
    const result = original(...args);
    return result instanceof Promise ? result.then(done) : done(result);
  };
}

interface DecoderParts {
  current: Record<string, unknown>;
  kv: Record<string, unknown>;
  logits: Record<string, unknown>;
}

async function profileGroup() {
  const policy = await loadOnnxPolicy({ model: dir });
  const decoder = (policy as unknown as { parts: { decoder: DecoderParts & Record<string, unknown> } }).parts.decoder;
  const session = decoder.current;
  timeInto((args) => ((args[0] as { input_ids: { dims: number[] } }).input_ids.dims[1] > 1 ? 'prefill run' : 'decode runs'), session, 'run');
  timeInto('decoder.forward', decoder, 'forward');
  for (const op of ['gather', 'merge', 'dispose']) timeInto('cache gather, merge, dispose', decoder.kv, op);
  timeInto('draws (softmax, sample, log-prob)', decoder.logits, 'sample');
  const prompt = benchPrompt(promptTokens);
  await policy.generateGroup({ prompt, groupSize: 2, maxNewTokens: 4, seed: 0 });
  for (const key of Object.keys(timers)) delete timers[key];
  let gcMs = 0;
  const observer = new PerformanceObserver((list) => list.getEntries().forEach((e) => (gcMs += e.duration)));
  observer.observe({ entryTypes: ['gc'] });
  const wall = performance.now();
  const cpu = process.cpuUsage();
  const group = await policy.generateGroup({ prompt, groupSize: G, maxNewTokens: newTokens, seed: 1 });
  const used = process.cpuUsage(cpu);
  const total = { n: 1, wallMs: performance.now() - wall, cpuMs: (used.user + used.system) / 1000 };
  await new Promise((resolve) => setTimeout(resolve, 20)); // the observer reports asynchronously
  observer.disconnect();
  await policy.dispose();
  return { total, timers, gcWallMs: gcMs, tokens: group.completions.reduce((n, c) => n + c.tokenIds.length, 0), promptTokens: group.promptTokenIds.length };
}

/** CPU and wall ms per decode step of G rows on a cache of `length` positions, straight on onnxruntime. */
async function decodeStep(spinning: boolean, lengths: number[]) {
  const config = JSON.parse(await (await import('node:fs/promises')).readFile(`${dir}/config.json`, 'utf8')) as Record<string, number>;
  const { num_hidden_layers: layers, num_key_value_heads: heads, head_dim: D } = config;
  const session = await ort.InferenceSession.create(`${dir}/onnx/model.onnx`, spinning ? {} : { extra: { session: { intra_op: { allow_spinning: '0' } } } });
  const out: Record<number, { cpuMs: number; wallMs: number }> = {};
  for (const L of lengths) {
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from({ length: G }, (_, i) => BigInt(100 + i)), [G, 1]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(G * (L + 1)).fill(1n), [G, L + 1]),
      position_ids: new ort.Tensor('int64', new BigInt64Array(G).fill(BigInt(L)), [G, 1]),
    };
    for (let i = 0; i < layers; i++) for (const kv of ['key', 'value']) feeds[`past_key_values.${i}.${kv}`] = new ort.Tensor('float32', new Float32Array(G * heads * L * D).fill(0.01), [G, heads, L, D]);
    const step = async () => Object.values(await session.run(feeds)).forEach((t) => t.dispose());
    await step();
    const steps = 6;
    const wall = performance.now();
    const cpu = process.cpuUsage();
    for (let s = 0; s < steps; s++) await step();
    const used = process.cpuUsage(cpu);
    out[L] = { cpuMs: (used.user + used.system) / 1000 / steps, wallMs: (performance.now() - wall) / steps };
  }
  await session.release();
  return out;
}

const group = await profileGroup();
const lengths = [8, promptTokens + newTokens / 2];
const steps = { spinning: await decodeStep(true, lengths), notSpinning: await decodeStep(false, lengths) };
const config = JSON.parse(await (await import('node:fs/promises')).readFile(`${dir}/config.json`, 'utf8')) as Record<string, number>;
// present.{i}.key and .value of every layer, [G, kvHeads, positions + 1, headDim] float32.
const presentBytes = config.num_hidden_layers * 2 * G * config.num_key_value_heads * (lengths[1] + 1) * config.head_dim * 4;
console.log(JSON.stringify({ G, newTokens, ...group, decodeStep: steps, presentBytes }));
