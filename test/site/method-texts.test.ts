/**
 * The sentences the playground shows about each method, read against what the code does: the
 * picker's summary and its note on the random-weight model, the live text after a group's
 * advantages, the adapter panel's explanation, the Dynamic sampling hint, the playground's guide
 * (docs/playground.md) where it states the first run's settings, and the README's first-run
 * paragraph; the first screen's sentence of what the first run changes, against the run
 * BENCHMARKS records.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { RunRecord } from '../../lib/index.js';
import { LORA_MODULES } from '../../lib/weights/decoder.js';
import { DYNAMIC_SAMPLING_DEFAULTS } from '../../lib/run/dynamic-sampling.js';
import { adapterAbout } from '../../site/lib/adapter-view.js';
import { FIRST_RUN_MEASURED, firstRunChange } from '../../site/lib/first-run.js';
import { ONNX_MODELS } from '../../site/lib/models.js';
import { PLAYGROUND_ARMS } from '../../site/lib/arms.js';
import { kindView } from '../../site/lib/kind-view.js';
import { choiceOf } from '../../site/lib/methods.js';
import { DYNAMIC_SAMPLING_HINT, INITIAL_SETUP, runPlan, SKILL_GRADIENT_DEFAULTS } from '../../site/lib/setup.js';
import { sampleRun } from '../tfgrpo/helpers/records.js';

const base = sampleRun('x');
const lora = { ...base, kind: 'lora', config: { ...base.config, optimizer: { lr: 0.002 }, lora: { r: 8, alpha: 16, targetModules: [...LORA_MODULES] }, numIterations: 1, loss: { lossType: 'grpo' }, engine: 'onnxruntime', backend: 'wasm' } } as unknown as RunRecord & { kind: 'lora' };
const gradient = { ...base, kind: 'gradient', config: { ...base.config, optimizer: { lr: 0.01 }, adapter: { rank: 8, scale: 1, hiddenSize: 64, vocabSize: 100 }, numIterations: 1, loss: { lossType: 'grpo' } } } as unknown as RunRecord & { kind: 'gradient' };

/** Every sentence the page shows about a trained adapter, by method. */
function adapterTexts(id: 'gradient' | 'lora'): string[] {
  const run = id === 'lora' ? lora : gradient;
  const method = choiceOf(id);
  return [method.summary, method.onBundled ?? '', kindView(run).afterAdvantages(run, 0), adapterAbout(run, undefined).explanation];
}

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const playground = readFileSync(new URL('../../docs/playground.md', import.meta.url), 'utf8');
const source = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const WORDS: Record<string, number> = { one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10 };
const count = (word: string) => WORDS[word] ?? Number(word);

describe('what the page says about each method', () => {
  it('never says a LoRA adapter is merged into the weights: the sampler takes A and B as graph inputs', () => {
    // What the code does: a LoRA run's sampler follows the adapter (followAdapter), it never writes merged weights.
    const run = source('lib/methods/gradient/lora.ts');
    expect(run).toMatch(/followAdapter\(handles\.policy, trainer\.engine\.adapter\)/);
    expect(run).not.toMatch(/mergeLoraIntoOnnx\(/);
    expect(source('site/lib/gradient-worker.ts')).not.toMatch(/mergeLoraIntoOnnx/);
    for (const text of [...adapterTexts('lora'), ...adapterTexts('gradient')]) expect(text).not.toMatch(/merg/i);
    const [summary, , live, panel] = adapterTexts('lora');
    for (const text of [summary, live, panel]) expect(text).toMatch(/A and B as inputs of (its|the model’s) graph/);
    // The playground's guide describes the tab's runs; the merge helper lives in the LoRA guide.
    const loraRuns = playground.slice(playground.indexOf('LoRA runs'), playground.indexOf('The router'));
    expect(loraRuns).toMatch(/A and B as inputs\s+of the model's graph \(no merge\)/);
    expect(loraRuns).not.toMatch(/merged/);
  });

  it('names the projections LoRA trains and the router’s variants as the code defines them', () => {
    // LoRA's defaults train all seven projections: the four attention ones and the three MLP ones.
    expect(LORA_MODULES.filter((m) => m.endsWith('_proj'))).toHaveLength(7);
    expect(choiceOf('lora').summary).toContain('attention and MLP projections of every layer');
    expect(lora.config.lora.targetModules).toEqual([...LORA_MODULES]);
    const variants = choiceOf('router').summary.match(/\(([^)]*)\)/)?.[1];
    expect(variants).toBe(PLAYGROUND_ARMS.map((a) => a.label.toLowerCase()).join(', '));
  });

  it('points the random-weight model’s exemplars to the tasks the gradient method lists for it', () => {
    const note = choiceOf('exemplars').onBundled ?? '';
    const tiny = choiceOf('gradient').tasks?.tiny ?? [];
    expect(note).toContain(`Gradient (adapter) on ${tiny.join(' or ')}`);
  });

  it('states the resample limit the loop uses, under the box and in the playground guide', () => {
    const n = DYNAMIC_SAMPLING_DEFAULTS.maxResamples;
    expect(DYNAMIC_SAMPLING_HINT).toContain(`up to ${n} times`);
    expect(playground).toContain(`sampled again up to ${n} times`);
  });

  it('states the first run’s and the head adapter’s settings as the defaults are', () => {
    const first = playground.match(/the\s+first run: LoRA on `([\w-]+)` at `([\w-]+)`, (\d+) prompts, (\d+) per step, (\w+) epochs?, lr ([\d.]+), rank (\d+)/);
    expect(first).not.toBeNull();
    const [, model, task, prompts, perStep, epochs, lr, rank] = first!;
    expect(model).toBe(ONNX_MODELS[0].folder);
    expect({ task, method: 'lora', items: Number(prompts), batchSize: Number(perStep), epochs: count(epochs), lr: Number(lr), rank: Number(rank) }).toEqual({
      task: INITIAL_SETUP.task,
      method: INITIAL_SETUP.method,
      items: INITIAL_SETUP.items,
      batchSize: INITIAL_SETUP.batchSize,
      epochs: INITIAL_SETUP.epochs,
      lr: INITIAL_SETUP.lr,
      rank: INITIAL_SETUP.rank,
    });
    const head = playground.match(/head\s+adapter takes lr ([\d.]+) and (\w+) epochs/);
    expect(head).not.toBeNull();
    expect({ lr: Number(head![1]), epochs: count(head![2]) }).toEqual({ lr: SKILL_GRADIENT_DEFAULTS.lr, epochs: SKILL_GRADIENT_DEFAULTS.epochs });
    expect(choiceOf('gradient').skillDefaults).toEqual(SKILL_GRADIENT_DEFAULTS);
    // The README's opening names the first run's step count.
    const intro = readme.slice(0, readme.indexOf('\n## '));
    expect(Number(/\("sort: log nest rat fig" -> "fig log nest rat"\), (\d+) steps/.exec(intro)?.[1])).toBe(runPlan(INITIAL_SETUP).steps);
  });

  it('says what the first run changes with the numbers BENCHMARKS records of it, greedy and at T=1', () => {
    const bench = readFileSync(new URL('../../BENCHMARKS.md', import.meta.url), 'utf8');
    const teach = bench.slice(bench.indexOf('<!-- /bench:teach -->'), bench.indexOf('<!-- bench:', bench.indexOf('<!-- /bench:teach -->')));
    const { greedy, t1, mended } = FIRST_RUN_MEASURED;
    expect(teach).toContain(`held-out exact match greedy ${greedy[0]}% -> ${greedy[1]}%, T=1 ${t1[0]}% -> ${t1[1]}%`);
    expect(teach).toContain(`"${mended.prompt}" "${mended.before}" -> "${mended.after}"`);
    expect(teach).toMatch(/The playground's first run\*\* \(`INITIAL_SETUP`.*LoRA on every layer at sort-words, 1536 training-split prompts, 16 per step, one epoch = 96 steps, groups of 8 at T=1, at most 24 new tokens, lr 0.002, rank 8, dynamic sampling, seed 0\)/);
    expect({ ...INITIAL_SETUP }).toMatchObject({ task: 'sort-words', method: 'lora', items: 1536, batchSize: 16, epochs: 1, groupSize: 8, temperature: 1, maxNewTokens: 24, lr: 0.002, rank: 8, dynamicSampling: true, seed: 0 });
    // The README's opening gives the same run's numbers and mended reply.
    const intro = readme.slice(0, readme.indexOf('\n## ')).replace(/\s+/g, ' ');
    expect(intro).toContain(`${greedy[0]}% -> ${greedy[1]}% greedy, ${t1[0]}% -> ${t1[1]}% at temperature 1`);
    expect(intro).toContain(`"${mended.before}" become "${mended.after}"`);
    expect(firstRunChange()).toBe(
      `It learns to sort the words instead of copying them in the order given (“${mended.before}” becomes “${mended.after}”): measured in headless Chromium, held-out exact match went from ${greedy[0]}% to ${greedy[1]}% greedy and from ${t1[0]}% to ${t1[1]}% at temperature 1.`,
    );
  });
});
