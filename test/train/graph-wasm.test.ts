/**
 * The same training graphs on onnxruntime-web's WASM kernels (what a tab runs; here hosted by
 * Node) give onnxruntime-node's log-probs, entropies and A/B gradients, on an Optimum-named
 * export with q/k/v biases and an untied head, the head's table fed to each run or held in its
 * session; so do the head adapter's graphs and pretraining's
 * full-parameter graphs.
 */
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';
import { expect, it } from 'vitest';
import { createAdapterWeights } from '../../lib/train/head/adapter.js';
import { createLoraAdapter } from '../../lib/lora/adapter.js';
import { mulberry32 } from '../../lib/math/random.js';
import { findDecoder } from '../../lib/policy/onnx/structure/find-decoder.js';
import { FullTrainingEngine } from '../../lib/train/full-engine.js';
import { HeadGraphs } from '../../lib/train/graph/head-graphs.js';
import { LoraGraphs } from '../../lib/train/graph/lora-graph-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { buildExport } from './exports.js';

it('onnxruntime-web (WASM) runs the training graphs as onnxruntime-node does', async () => {
  ortWeb.env.wasm.numThreads = 1;
  const ex = buildExport({ names: 'exporter', qkvBias: true, tieWordEmbeddings: false });
  const decoder = findDecoder(ex.graph, { config: ex.config });
  const adapter = createLoraAdapter(decoder.shape, { seed: 2 });
  const rng = mulberry32(3);
  for (const layer of adapter.layers) for (const pair of Object.values(layer)) for (let i = 0; i < pair.B.length; i++) pair.B[i] = (2 * rng() - 1) * 0.2;
  const groups = [{ promptIds: [1, 40, 41, 42], completions: [[50, 51, 52], [53], [54, 55]] }];
  const lora = { r: adapter.config.r, scale: adapter.scale, targetModules: adapter.config.targetModules };
  const results = [];
  // onnxruntime-web with the head's table fed to each run, and held in its session (a page's default, which releases the arrays it is given).
  const runs = [[ortNode, 'input'], [ortWeb, 'input'], [ortWeb, 'session']] as unknown as Array<[GraphRuntime, 'input' | 'session']>;
  for (const [runtime, headTable] of runs) {
    const weights = headTable === 'input' ? decoder : { ...decoder, embedding: decoder.embedding.slice(), lmHead: decoder.lmHead?.slice() };
    const engine = await LoraGraphs.create(runtime, weights, lora, { headTable });
    const pass = await engine.forward(adapter, groups, 0.8);
    const grad = await pass.backward(pass.logprobs.map((row) => row.map((_, t) => 1 - t / 3)), pass.entropies.map((row) => row.map(() => 0.1)));
    results.push({ pass, grad });
    await engine.release();
  }
  const [node, ...webs] = results;
  for (const web of webs) {
  node.pass.logprobs.forEach((row, i) => row.forEach((lp, t) => expect(Math.abs(lp - web.pass.logprobs[i][t])).toBeLessThan(1e-5)));
  node.pass.entropies.forEach((row, i) => row.forEach((h, t) => expect(Math.abs(h - web.pass.entropies[i][t])).toBeLessThan(1e-5)));
  node.grad.layers.forEach((layer, l) => {
    for (const [m, pair] of Object.entries(layer)) {
      for (const which of ['A', 'B'] as const) {
        const want = pair[which];
        const got = web.grad.layers[l][m as keyof typeof layer]![which];
        const scale = Math.max(...Array.from(want, Math.abs));
        expect(scale).toBeGreaterThan(0);
        expect(Math.max(...Array.from(want, (v, i) => Math.abs(v - got[i]))) / scale, `layer ${l} ${m}.${which}`).toBeLessThan(1e-4);
      }
    }
  });
  }
});

it('onnxruntime-web (WASM) runs the head graphs and the full-parameter graphs as onnxruntime-node does', async () => {
  ortWeb.env.wasm.numThreads = 1;
  const runtimes = [ortNode, ortWeb] as unknown as GraphRuntime[];
  // The head adapter: random token states, one update's numbers and gradients.
  const shape = { hiddenSize: 12, vocabSize: 19, rank: 3, scale: 2 };
  const weights = createAdapterWeights(shape, 5);
  const rng = mulberry32(6);
  weights.b.forEach((_, i) => (weights.b[i] = 2 * rng() - 1));
  const tokens = 7;
  const z = Float32Array.from({ length: tokens * shape.vocabSize }, () => 4 * rng() - 2);
  const h = Float32Array.from({ length: tokens * shape.hiddenSize }, () => 2 * rng() - 1);
  const targets = Int32Array.from({ length: tokens }, () => Math.floor(rng() * shape.vocabSize));
  const dLogp = Float64Array.from({ length: tokens }, () => 2 * rng() - 1);
  const heads = [];
  for (const runtime of runtimes) {
    const engine = new HeadGraphs(weights, async () => runtime);
    await engine.writeStates(z, h);
    const stats = await engine.forward(targets, 0.9);
    await engine.backward(targets, dLogp, dLogp.map((x) => x / 2), 0.9);
    heads.push({ stats, grad: await engine.gradients() });
    engine.dispose();
  }
  const close = (a: ArrayLike<number>, b: ArrayLike<number>, tolerance: number) => Array.from(a).forEach((v, i) => expect(Math.abs(v - b[i])).toBeLessThan(tolerance));
  for (const key of ['logps', 'entropies', 'refLogps'] as const) close(heads[0].stats[key], heads[1].stats[key], 1e-5);
  close(heads[0].grad.a, heads[1].grad.a, 1e-5);
  close(heads[0].grad.b, heads[1].grad.b, 1e-5);
  // Pretraining's graphs: the gradient of every weight.
  const ex = buildExport({ names: 'exporter', qkvBias: true, tieWordEmbeddings: false });
  const batch = [{ prompt: [1, 40, 41, 42], completions: [[50, 51, 52], [53]] }];
  const grads: Float32Array[][] = [];
  for (const runtime of runtimes) {
    const engine = await FullTrainingEngine.create(runtime, findDecoder(ex.graph, { config: ex.config }));
    const stats = await engine.forward(batch, { temperature: 1, reference: false });
    await engine.backward(stats.logps.map(() => -0.25), new Float64Array(stats.logps.length));
    grads.push(engine.gradient()!);
    engine.dispose();
  }
  grads[0].forEach((want, k) => {
    const scale = Math.max(...Array.from(want, Math.abs));
    expect(scale).toBeGreaterThan(0);
    close(grads[1][k].map((v) => v / scale), want.map((v) => v / scale), 1e-4);
  });
});
