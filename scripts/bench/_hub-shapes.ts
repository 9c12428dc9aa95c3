/**
 * The hub's small instruct models as builder specs: their published config values (hidden size,
 * layers, heads, vocabulary...) with random weights, so a model of each one's exact size can be
 * built here, where none can be downloaded. Built on demand into build/models/hub-shape/<name>
 * (gitignored). The vocabulary is the builder's characters plus reserved tokens up to the hub's size.
 */
import { BASE_VOCAB_SIZE } from '../build-model/tokenizer.js';
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { buildModel, MODEL_FILES, type ModelSpec } from '../build-model/index.js';

interface HubShape {
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  ropeTheta: number;
  rmsNormEps: number;
  qkvBias?: boolean;
  qkNorm?: boolean;
}

/** From each model's config.json (HuggingFaceTB/SmolLM2-135M-Instruct, -360M-Instruct, Qwen/Qwen2.5-0.5B-Instruct, Qwen/Qwen3-0.6B). */
export const HUB_SHAPES: Record<string, HubShape> = {
  'smollm2-135m': { hiddenSize: 576, intermediateSize: 1536, numLayers: 30, numHeads: 9, numKvHeads: 3, headDim: 64, vocabSize: 49152, ropeTheta: 100000, rmsNormEps: 1e-5 },
  'smollm2-360m': { hiddenSize: 960, intermediateSize: 2560, numLayers: 32, numHeads: 15, numKvHeads: 5, headDim: 64, vocabSize: 49152, ropeTheta: 100000, rmsNormEps: 1e-5 },
  'qwen2.5-0.5b': { hiddenSize: 896, intermediateSize: 4864, numLayers: 24, numHeads: 14, numKvHeads: 2, headDim: 64, vocabSize: 151936, ropeTheta: 1000000, rmsNormEps: 1e-6, qkvBias: true },
  'qwen3-0.6b': { hiddenSize: 1024, intermediateSize: 3072, numLayers: 28, numHeads: 16, numKvHeads: 8, headDim: 128, vocabSize: 151936, ropeTheta: 1000000, rmsNormEps: 1e-6, qkNorm: true },
};

export async function hubShapeSpec(name: string, dtype: 'fp32' | 'fp16' | 'q4' = 'fp32'): Promise<{ spec: ModelSpec; dir: string }> {
  const shape = HUB_SHAPES[name];
  if (!shape) throw new Error(`Unknown hub shape "${name}". Known: ${Object.keys(HUB_SHAPES).join(', ')}.`);
  const { vocabSize, qkvBias, qkNorm, ...dims } = shape;
  const spec: ModelSpec = {
    seed: 20261206,
    ...dims,
    tieWordEmbeddings: true,
    reservedTokens: vocabSize - BASE_VOCAB_SIZE,
    maxPositionEmbeddings: 8192,
    stopsAtEndTokens: false,
    names: 'exporter',
    weights: dtype,
    ...(qkvBias ? { qkvBias } : {}),
    ...(qkNorm ? { qkNorm } : {}),
  };
  return { spec, dir: `build/models/hub-shape/${name}${dtype === 'fp32' ? '' : `-${dtype}`}` };
}

/** The hub shape's model folder, built on first use, with its model file and that file's size. */
export async function hubShapeModel(name: string, dtype: 'fp32' | 'fp16' | 'q4'): Promise<{ dir: string; file: string; modelBytes: number }> {
  const { spec, dir } = await hubShapeSpec(name, dtype);
  const file = join(dir, MODEL_FILES[dtype]);
  if (!existsSync(file)) await buildModel(spec, dir);
  return { dir, file, modelBytes: (await stat(file)).size };
}

/** `fn`'s value and the process's CPU milliseconds (user + system) it took. */
export async function cpuTimed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const c0 = process.cpuUsage();
  const value = await fn();
  const c = process.cpuUsage(c0);
  return [value, (c.user + c.system) / 1000];
}
