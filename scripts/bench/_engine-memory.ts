/**
 * Where the LoRA engine's own bytes go at a hub shape (no sampler in the process): the weights
 * read, the graphs built, then a forward and a backward of a random group of G x T tokens after a
 * 39-token prompt, twice, with the process's resident memory after each. `arena-off` runs every
 * engine session without onnxruntime's CPU arena, so what the arenas keep shows as the difference.
 *
 *   tsx scripts/bench/_engine-memory.ts <shape> <fp32|q4> <group> <new tokens> [arena-off|arena-on] [microBatchTokens]
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { createLoraAdapter } from '../../lib/lora/adapter.js';
import { findDecoder } from '../../lib/policy/onnx/structure/find-decoder.js';
import { LoraGraphs } from '../../lib/train/graph/lora-graph-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { hubShapeModel } from './_hub-shapes.js';

async function main(): Promise<void> {
  const [shape, dtype, groupArg, tokensArg, mode, microArg] = process.argv.slice(2);
  if (dtype !== 'fp32' && dtype !== 'q4') throw new Error(`dtype must be fp32 or q4, got ${dtype}`);
  const { dir, file } = await hubShapeModel(shape, dtype);
  const MB = (bytes: number) => Math.round(bytes / 1e6);
  const mark = (phase: string) => console.log(JSON.stringify({ phase, rssMB: MB(process.memoryUsage().rss), peakMB: MB(process.resourceUsage().maxRSS * 1024) }));
  mark('start');
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const weights = findDecoder(new Uint8Array(await readFile(file)), { config, externalData: {} });
  mark('weights read (the file too)');
  const adapter = createLoraAdapter(weights.shape, { r: 8, alpha: 16, seed: 3 });
  const lora = { r: 8, scale: adapter.scale, targetModules: adapter.config.targetModules };
  const engine = await LoraGraphs.create(ort as unknown as GraphRuntime, weights, lora, {
    ...(mode === 'arena-off' ? { sessionOptions: { enableCpuMemArena: false } } : {}),
    ...(microArg ? { microBatchTokens: Number(microArg) } : {}),
  });
  mark('graphs built');
  let seed = 1;
  const draw = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % weights.shape.vocabSize;
  const group = { promptIds: Array.from({ length: 39 }, draw), completions: Array.from({ length: Number(groupArg) }, () => Array.from({ length: Number(tokensArg) }, draw)) };
  for (let step = 1; step <= 2; step++) {
    const pass = await engine.forward(adapter, [group]);
    mark(`step ${step} forward`);
    await pass.backward(pass.logprobs.map((row) => row.map(() => 0.01)));
    mark(`step ${step} backward`);
  }
  await engine.release();
}

await main();
