/**
 * Log-probs of completions under a LoRA adapter from the training graphs on onnxruntime-node (in
 * float32 or float64): what the tests compare the sampler and the merged models with, now that
 * the graphs are the one engine. One engine per weights, adapter shape and precision, kept.
 */
import * as ort from 'onnxruntime-node';
import type { LoraAdapter } from '../../lib/lora/adapter.js';
import type { DecoderWeights } from '../../lib/weights/decoder.js';
import type { Precision } from '../../lib/train/graph/builder.js';
import { LoraGraphs, type GraphGroup } from '../../lib/train/graph/lora-graph-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';

const engines = new WeakMap<DecoderWeights, Map<string, Promise<LoraGraphs>>>();

export function graphEngineFor(weights: DecoderWeights, adapter: LoraAdapter, precision: Precision = 'float32'): Promise<LoraGraphs> {
  const { r, targetModules } = adapter.config;
  const key = `${r}/${adapter.scale}/${targetModules.join(',')}/${precision}`;
  let byKey = engines.get(weights);
  if (!byKey) engines.set(weights, (byKey = new Map()));
  let engine = byKey.get(key);
  if (!engine) {
    engine = LoraGraphs.create(ort as unknown as GraphRuntime, weights, { r, scale: adapter.scale, targetModules }, { precision });
    byKey.set(key, engine);
  }
  return engine;
}

/** Per completion, the log-probs of its tokens after the group's prompt, under `adapter` at `temperature`. */
export async function graphLogprobs(weights: DecoderWeights, adapter: LoraAdapter, group: GraphGroup, temperature = 1, precision: Precision = 'float32'): Promise<number[][]> {
  const engine = await graphEngineFor(weights, adapter, precision);
  return (await engine.forward(adapter, [group], temperature)).logprobs;
}
