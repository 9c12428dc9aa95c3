/**
 * The same training graphs on onnxruntime-web's WASM kernels (what a tab runs; here hosted by
 * Node) give onnxruntime-node's log-probs, entropies and A/B gradients, on an Optimum-named
 * export with q/k/v biases and an untied head.
 */
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';
import { expect, it } from 'vitest';
import { createLoraAdapter } from '../../lib/lora/adapter.js';
import { mulberry32 } from '../../lib/math/random.js';
import { findDecoder } from '../../lib/policy/onnx/structure/find-decoder.js';
import { LoraGraphEngine } from '../../lib/train/graph/lora-graph-engine.js';
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
  for (const runtime of [ortNode, ortWeb] as unknown as GraphRuntime[]) {
    const engine = await LoraGraphEngine.create(runtime, decoder, lora);
    const pass = await engine.forward(adapter, groups, 0.8);
    const grad = await pass.backward(pass.logprobs.map((row) => row.map((_, t) => 1 - t / 3)), pass.entropies.map((row) => row.map(() => 0.1)));
    results.push({ pass, grad });
    await engine.release();
  }
  const [node, web] = results;
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
});
