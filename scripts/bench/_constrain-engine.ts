/**
 * Constrained decoding end to end: tokens/s of `generateGroup` on the bench model with and without
 * a `responseFormat`, same prompt, seeds and budget, best of alternating runs (a busy neighbour
 * slows both alike). The bench model's generation config names no end token, so both sides decode
 * to `maxNewTokens` and do the same number of forward passes; a finished constrained row repeats
 * the tokenizer's end token, as it would at an EOS-less model's budget.
 */
import { performance } from 'node:perf_hooks';
import { criticOperationsSchema } from '../../lib/method.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import type { ResponseFormat } from '../../lib/core/policy.js';
import { BENCH, buildModel, MODEL_DIRS } from '../build-model/index.js';

const GROUP = 8;
const NEW_TOKENS = 64;
const REPEATS = 3;

const FORMATS: Array<[string, ResponseFormat | undefined]> = [
  ['none', undefined],
  ['json_object', { type: 'json_object' }],
  ['critic operations schema', { type: 'json_schema', schema: criticOperationsSchema() }],
];

export async function engineSection(): Promise<string> {
  await buildModel(BENCH, MODEL_DIRS.bench);
  const policy = await loadOnnxPolicy({ model: MODEL_DIRS.bench, device: 'cpu' });
  try {
    const options = { prompt: 'Answer in JSON: '.repeat(8), groupSize: GROUP, maxNewTokens: NEW_TOKENS, seed: 7 };
    const best = new Map<string, number>();
    for (const [, format] of FORMATS) await policy.generateGroup({ ...options, responseFormat: format }); // warm-up, masks cached
    for (let r = 0; r < REPEATS; r++) {
      for (const [name, format] of FORMATS) {
        const start = performance.now();
        const group = await policy.generateGroup({ ...options, responseFormat: format });
        const rate = (group.usage.completionTokens / (performance.now() - start)) * 1000;
        best.set(name, Math.max(best.get(name) ?? 0, rate));
      }
    }
    const base = best.get('none')!;
    return [
      `### generateGroup with a responseFormat (bench model, CPU, G = ${GROUP}, ${NEW_TOKENS} new tokens)`,
      '',
      'Tokens/s of the whole engine (forward pass, mask, sampling), best of 3 alternating runs after a',
      'warm-up that fills the mask cache (the second request with a schema onwards).',
      '',
      '| responseFormat | tokens/s | vs none |',
      '| --- | ---: | ---: |',
      ...FORMATS.map(([name]) => `| ${name} | ${best.get(name)!.toFixed(0)} | ${(best.get(name)! / base).toFixed(2)}x |`),
    ].join('\n');
  } finally {
    await policy.dispose();
  }
}
