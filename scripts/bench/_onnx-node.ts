/**
 * Child process of the onnx bench: one implementation in a fresh Node process, so its peak
 * resident memory is its own. Usage: tsx _onnx-node.ts <webgrpo|transformers.js> <model dir> <cases JSON>
 * Prints one JSON object: { measurements, peakRssBytes } (peak taken after the first case).
 */
import { resourceUsage } from 'node:process';
import { AutoModelForCausalLM, AutoTokenizer, env, Tensor } from '@huggingface/transformers';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { benchPrompt, measureTransformers, measureWebgrpo, type BenchCase, type Measurement } from './_onnx-measure.js';

const [implementation, dir, casesJson] = process.argv.slice(2);
const { cases, promptTokens } = JSON.parse(casesJson) as { cases: BenchCase[]; promptTokens: number };
const prompt = benchPrompt(promptTokens);
const warmup: BenchCase = { groupSize: 2, newTokens: 4, seed: 0 };
env.allowRemoteModels = false;

let measure: (c: BenchCase) => Promise<Measurement>;
if (implementation === 'webgrpo') {
  const policy = await loadOnnxPolicy({ model: dir });
  measure = (c) => measureWebgrpo(policy, prompt, c);
} else {
  const [tokenizer, model] = await Promise.all([AutoTokenizer.from_pretrained(dir), AutoModelForCausalLM.from_pretrained(dir)]);
  const promptIds = tokenizer.encode(prompt, { add_special_tokens: false });
  measure = (c) => measureTransformers(model, Tensor, promptIds, c);
}
await measure(warmup);
const measurements: Measurement[] = [];
let peakRssBytes = 0;
for (const c of cases) {
  measurements.push(await measure(c));
  peakRssBytes ||= resourceUsage().maxRSS * 1024;
}
console.log(JSON.stringify({ measurements, peakRssBytes }));
