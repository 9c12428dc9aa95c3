/**
 * A full-depth LoRA adapter as one JSON document, and a run's checkpoint of it (the adapter plus
 * AdamW's state), in the head adapter file's encoding (lib/train/head/format.ts): base64 float32
 * little-endian tensors in PEFT's layouts, A [r, in] and B [out, r] row-major. Version 1:
 *
 *   {
 *     "format": "webgrpo.lora", "version": 1, "target": "decoder",
 *     "r": 8, "alpha": 16, "useRslora": false, "targetModules": ["q_proj", ...],
 *     "model": "<base model id>", "updates": n, "createdAt": "<ISO time>",
 *     "layers": [ { "q_proj": { "inDim": 128, "outDim": 128, "a": "<base64>", "b": "<base64>" }, ... }, ... ]
 *   }
 *
 * Decoding is bit-exact, so a run resumed from its checkpoint trains on exactly the numbers it
 * stopped with. To hand an adapter to PEFT or TRL, `exportPeftAdapter` writes PEFT's own folder.
 */
import { InvalidInputError } from '../errors.js';
import { decodeFloats, encodeFloats } from '../core/float-base64.js';
import { loraScale, resolveLoraConfig, type LoraAdapter, type LoraPair } from './adapter.js';
import type { LoraOptimizerState } from './optimizer.js';
import { LORA_MODULES, type LoraModule } from '../weights/decoder.js';
import { parsedJson } from '../core/shape.js';

export const LORA_ADAPTER_FORMAT = 'webgrpo.lora';
export const LORA_ADAPTER_VERSION = 1;

/** One adapted projection's tensors. */
export interface LoraPairJson {
  inDim: number;
  outDim: number;
  a: string;
  b: string;
}

export type LoraLayersJson = Array<Partial<Record<LoraModule, LoraPairJson>>>;

export interface LoraAdapterFile {
  format: typeof LORA_ADAPTER_FORMAT;
  version: number;
  target: 'decoder';
  r: number;
  alpha: number;
  useRslora: boolean;
  targetModules: LoraModule[];
  model?: string;
  updates?: number;
  createdAt: string;
  layers: LoraLayersJson;
}

/** What a LoRA run stores after each step: the adapter and the optimizer's moments and update count. */
export interface LoraCheckpoint {
  /** The run's step after which it was taken. */
  step: number;
  adapter: LoraAdapterFile;
  optimizer: { updates: number; m: LoraLayersJson; v: LoraLayersJson };
}

/** A LoRA adapter as a JSON-safe file (every layer's A and B, base64 float32), with the model it was trained on and its update count. */
export function writeLoraAdapterFile(adapter: LoraAdapter, meta: { model?: string; updates?: number } = {}): LoraAdapterFile {
  const { r, alpha, useRslora, targetModules } = adapter.config;
  return {
    format: LORA_ADAPTER_FORMAT,
    version: LORA_ADAPTER_VERSION,
    target: 'decoder',
    r,
    alpha,
    useRslora,
    targetModules: [...targetModules],
    ...(meta.model !== undefined ? { model: meta.model } : {}),
    ...(meta.updates !== undefined ? { updates: meta.updates } : {}),
    createdAt: new Date().toISOString(),
    layers: encodeLayers(adapter),
  };
}

/** Validates a LoRA adapter file (an object or its JSON text) and decodes it. */
export function readLoraAdapterFile(data: unknown, at = 'adapter'): LoraAdapter & { model?: string; updates?: number } {
  const value = parsedJson(data, at);
  const file = object(value, at);
  if (file.format !== LORA_ADAPTER_FORMAT) throw new InvalidInputError(`${at}.format`, `expected "${LORA_ADAPTER_FORMAT}"; is this a webgrpo LoRA adapter file?`);
  if (!Number.isInteger(file.version) || (file.version as number) < 1) throw new InvalidInputError(`${at}.version`, 'expected a positive integer.');
  if ((file.version as number) > LORA_ADAPTER_VERSION) {
    throw new InvalidInputError(`${at}.version`, `is ${String(file.version)}, newer than this webgrpo reads (${LORA_ADAPTER_VERSION}); upgrade webgrpo.`);
  }
  if (file.target !== 'decoder') throw new InvalidInputError(`${at}.target`, 'expected "decoder".');
  if (typeof file.useRslora !== 'boolean') throw new InvalidInputError(`${at}.useRslora`, 'expected true or false.');
  const config = resolveLoraConfig({ r: file.r as number, alpha: file.alpha as number, targetModules: file.targetModules as LoraModule[], useRslora: file.useRslora });
  if (file.model !== undefined && typeof file.model !== 'string') throw new InvalidInputError(`${at}.model`, 'expected a string.');
  if (file.updates !== undefined && !(Number.isInteger(file.updates) && (file.updates as number) >= 0)) throw new InvalidInputError(`${at}.updates`, 'expected an integer >= 0.');
  if (typeof file.createdAt !== 'string') throw new InvalidInputError(`${at}.createdAt`, 'expected an ISO date string.');
  const layers = decodeLayers(file.layers, config.r, config.targetModules, `${at}.layers`);
  return {
    config,
    scale: loraScale(config),
    layers,
    ...(file.model !== undefined ? { model: file.model as string } : {}),
    ...(file.updates !== undefined ? { updates: file.updates as number } : {}),
  };
}

export function writeLoraCheckpoint(adapter: LoraAdapter, state: LoraOptimizerState, step: number, model?: string): LoraCheckpoint {
  return {
    step,
    adapter: writeLoraAdapterFile(adapter, { model, updates: state.step }),
    optimizer: { updates: state.step, m: encodeLayers(state.m), v: encodeLayers(state.v) },
  };
}

/** Validates a LoRA checkpoint and decodes the adapter and the optimizer's state. */
export function readLoraCheckpoint(data: unknown, at = 'checkpoint'): { step: number; adapter: LoraAdapter; state: LoraOptimizerState; model?: string } {
  const cp = object(data, at);
  if (!Number.isInteger(cp.step) || (cp.step as number) < 0) throw new InvalidInputError(`${at}.step`, 'expected an integer >= 0.');
  const { model, updates: _updates, ...adapter } = readLoraAdapterFile(cp.adapter, `${at}.adapter`);
  const optimizer = object(cp.optimizer, `${at}.optimizer`);
  if (!Number.isInteger(optimizer.updates) || (optimizer.updates as number) < 0) throw new InvalidInputError(`${at}.optimizer.updates`, 'expected an integer >= 0.');
  const moments = (key: 'm' | 'v'): LoraAdapter => {
    const layers = decodeLayers(optimizer[key], adapter.config.r, adapter.config.targetModules, `${at}.optimizer.${key}`);
    layers.forEach((layer, l) => {
      for (const module of adapter.config.targetModules) {
        const own = adapter.layers[l]?.[module];
        const got = layer[module];
        if (!own !== !got || (own && got && (own.inDim !== got.inDim || own.outDim !== got.outDim))) {
          throw new InvalidInputError(`${at}.optimizer.${key}[${l}].${module}`, "does not have the adapter's layout.");
        }
      }
    });
    if (layers.length !== adapter.layers.length) throw new InvalidInputError(`${at}.optimizer.${key}`, `has ${layers.length} layers; the adapter has ${adapter.layers.length}.`);
    return { config: adapter.config, scale: adapter.scale, layers };
  };
  return { step: cp.step as number, adapter, state: { step: optimizer.updates as number, m: moments('m'), v: moments('v') }, ...(model !== undefined ? { model } : {}) };
}

function encodeLayers(adapter: LoraAdapter): LoraLayersJson {
  return adapter.layers.map((layer) => {
    const out: Partial<Record<LoraModule, LoraPairJson>> = {};
    for (const module of LORA_MODULES) {
      const pair = layer[module];
      if (pair) out[module] = { inDim: pair.inDim, outDim: pair.outDim, a: encodeFloats(pair.A), b: encodeFloats(pair.B) };
    }
    return out;
  });
}

function decodeLayers(value: unknown, r: number, targets: readonly LoraModule[], at: string): Array<Partial<Record<LoraModule, LoraPair>>> {
  if (!Array.isArray(value) || value.length === 0) throw new InvalidInputError(at, 'expected one entry per decoder layer.');
  return value.map((entry, l) => {
    const layer = object(entry, `${at}[${l}]`);
    const out: Partial<Record<LoraModule, LoraPair>> = {};
    for (const [module, raw] of Object.entries(layer)) {
      if (!targets.includes(module as LoraModule)) throw new InvalidInputError(`${at}[${l}].${module}`, `is not one of the adapter's target modules (${targets.join(', ')}).`);
      const pair = object(raw, `${at}[${l}].${module}`);
      const dim = (key: 'inDim' | 'outDim') => {
        const x = pair[key];
        if (!Number.isInteger(x) || (x as number) < 1) throw new InvalidInputError(`${at}[${l}].${module}.${key}`, 'expected an integer >= 1.');
        return x as number;
      };
      const inDim = dim('inDim');
      const outDim = dim('outDim');
      out[module as LoraModule] = { inDim, outDim, A: decodeFloats(pair.a, r * inDim, `${at}[${l}].${module}.a`), B: decodeFloats(pair.b, outDim * r, `${at}[${l}].${module}.b`) };
    }
    return out;
  });
}

function object(value: unknown, at: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidInputError(at, 'expected an object.');
  return value as Record<string, unknown>;
}
