/**
 * Child process of the onnx bench.
 *
 *   tsx _onnx-node.ts memory <webgrpo|transformers.js> <model dir> <spec JSON>
 *     one implementation alone in this process: a warm-up group, then the cases; prints
 *     { measurements, peakRssBytes } with the peak resident memory of the process.
 *   tsx _onnx-node.ts timing both <model dir> <spec JSON>
 *     both implementations in this process, each case run by one and then the other (alternating
 *     who goes first), so a busy neighbour slows both alike; prints { webgrpo, transformers.js }.
 *   tsx _onnx-node.ts timing sides <model dir> <spec JSON with sides: [{ name, implementation, sessionOptions? }]>
 *     the same with any number of sides, each loaded with its own onnxruntime session options
 *     (webgrpo's `sessionOptions`, transformers.js' `session_options`), the order rotating each
 *     case; prints { [name]: measurements }.
 */
import { resourceUsage } from 'node:process';
import { AutoModelForCausalLM, AutoTokenizer, env, Tensor } from '@huggingface/transformers';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { benchPrompt, measureTransformers, measureWebgrpo, type BenchCase, type Measurement } from './_onnx-measure.js';

type Implementation = Measurement['implementation'];
const [mode, implementation, dir, specJson] = process.argv.slice(2);
interface Side {
  name: string;
  implementation: Implementation;
  sessionOptions?: Record<string, unknown>;
}
const { cases, promptTokens, sides: sideSpecs } = JSON.parse(specJson) as { cases: BenchCase[]; promptTokens: number; sides?: Side[] };
const prompt = benchPrompt(promptTokens);
const warmup: BenchCase = { groupSize: 2, newTokens: 4, seed: 0 };
env.allowRemoteModels = false;

async function load(which: Implementation, sessionOptions?: Record<string, unknown>): Promise<(c: BenchCase) => Promise<Measurement>> {
  if (which === 'webgrpo') {
    const policy = await loadOnnxPolicy({ model: dir, ...(sessionOptions ? { sessionOptions } : {}) });
    return withCpu((c) => measureWebgrpo(policy, prompt, c));
  }
  const [tokenizer, model] = await Promise.all([AutoTokenizer.from_pretrained(dir), AutoModelForCausalLM.from_pretrained(dir, sessionOptions ? { session_options: sessionOptions } : {})]);
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
  // 'both': webgrpo and transformers.js with their own defaults, as two sides.
  const specs: Side[] = implementation === 'sides' ? (sideSpecs ?? []) : [{ name: 'webgrpo', implementation: 'webgrpo' }, { name: 'transformers.js', implementation: 'transformers.js' }];
  const sides: Array<[string, (c: BenchCase) => Promise<Measurement>]> = [];
  for (const side of specs) sides.push([side.name, await load(side.implementation, side.sessionOptions)]);
  const results: Record<string, Measurement[]> = Object.fromEntries(sides.map(([name]) => [name, []]));
  for (const [, measure] of sides) await measure(warmup);
  // The order rotates each case (with two sides, who goes first alternates).
  for (const [i, c] of cases.entries()) {
    for (let k = 0; k < sides.length; k++) {
      const [name, measure] = sides[(i + k) % sides.length];
      results[name].push(await measure(c));
    }
  }
  console.log(JSON.stringify(results));
}
