/**
 * Child process of the onnx bench.
 *
 *   tsx _onnx-node.ts memory <webgrpo|transformers.js> <model dir> <spec JSON>
 *     one implementation alone in this process: a warm-up group, then the cases; prints
 *     { measurements, peakRssBytes } with the peak resident memory of the process.
 *   tsx _onnx-node.ts timing both <model dir> <spec JSON>
 *     both implementations in this process, each case run by one and then the other (alternating
 *     who goes first), so a busy neighbour slows both alike; prints { webgrpo, transformers.js }.
 */
import { resourceUsage } from 'node:process';
import { AutoModelForCausalLM, AutoTokenizer, env, Tensor } from '@huggingface/transformers';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { benchPrompt, measureTransformers, measureWebgrpo, type BenchCase, type Measurement } from './_onnx-measure.js';

type Implementation = Measurement['implementation'];
const [mode, implementation, dir, specJson] = process.argv.slice(2);
const { cases, promptTokens } = JSON.parse(specJson) as { cases: BenchCase[]; promptTokens: number };
const prompt = benchPrompt(promptTokens);
const warmup: BenchCase = { groupSize: 2, newTokens: 4, seed: 0 };
env.allowRemoteModels = false;

async function load(which: Implementation): Promise<(c: BenchCase) => Promise<Measurement>> {
  if (which === 'webgrpo') {
    const policy = await loadOnnxPolicy({ model: dir });
    return withCpu((c) => measureWebgrpo(policy, prompt, c));
  }
  const [tokenizer, model] = await Promise.all([AutoTokenizer.from_pretrained(dir), AutoModelForCausalLM.from_pretrained(dir)]);
  const promptIds = tokenizer.encode(prompt, { add_special_tokens: false });
  return withCpu((c) => measureTransformers(model, Tensor, promptIds, c));
}

/** Adds the process's CPU time (every thread, user + system) over the measurement: on a shared machine wall time also counts the neighbours. */
function withCpu(measure: (c: BenchCase) => Promise<Measurement>): (c: BenchCase) => Promise<Measurement> {
  return async (c) => {
    const before = process.cpuUsage();
    const m = await measure(c);
    const used = process.cpuUsage(before);
    return { ...m, cpuMs: (used.user + used.system) / 1000 };
  };
}

if (mode === 'memory') {
  const measure = await load(implementation as Implementation);
  await measure(warmup);
  const measurements: Measurement[] = [];
  for (const c of cases) measurements.push(await measure(c));
  console.log(JSON.stringify({ measurements, peakRssBytes: resourceUsage().maxRSS * 1024 }));
} else {
  const sides = { webgrpo: await load('webgrpo'), 'transformers.js': await load('transformers.js') };
  const results: Record<Implementation, Measurement[]> = { webgrpo: [], 'transformers.js': [] };
  for (const measure of Object.values(sides)) await measure(warmup);
  for (const [i, c] of cases.entries()) {
    const order: Implementation[] = i % 2 === 0 ? ['webgrpo', 'transformers.js'] : ['transformers.js', 'webgrpo'];
    for (const which of order) results[which].push(await sides[which](c));
  }
  console.log(JSON.stringify(results));
}
