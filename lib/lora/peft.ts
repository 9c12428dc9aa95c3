/**
 * PEFT's LoRA folder, written and read: `adapter_config.json` and `adapter_model.safetensors`
 * with PEFT's tensor names, so an adapter trained here loads with `PeftModel.from_pretrained`
 * (and continues in TRL), and one trained with PEFT or TRL continues here:
 *
 *   base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight   [r, in]
 *   base_model.model.model.layers.{i}.self_attn.q_proj.lora_B.weight   [out, r]
 *   ... mlp.gate_proj / up_proj / down_proj
 *
 * Import accepts what this engine computes exactly (plain LoRA or rsLoRA, any subset of the seven
 * projections and of the layers, F32/F16/BF16) and refuses the rest by name (DoRA, per-module
 * ranks, bias training, modules_to_save, embedding adapters).
 */
import { InvalidInputError, ParseError, UnsupportedError } from '../errors.js';
import { loraScale, type LoraAdapter, type LoraConfig, type LoraPair } from './adapter.js';
import { readSafetensors, writeSafetensors } from '../weights/safetensors.js';
import { LORA_MODULES, MODULE_PARENT, moduleDims, type DecoderShape, type LoraModule } from '../weights/decoder.js';

/** The name PEFT gives an adapter folder's config file. */
export const PEFT_CONFIG_FILE = 'adapter_config.json';
/** The name PEFT gives an adapter folder's weights file. */
export const PEFT_WEIGHTS_FILE = 'adapter_model.safetensors';

export interface PeftFolder {
  [PEFT_CONFIG_FILE]: string;
  [PEFT_WEIGHTS_FILE]: Uint8Array;
}

export interface PeftExportOptions {
  /** The base model's hub id or path (`base_model_name_or_path`), e.g. "HuggingFaceTB/SmolLM2-135M-Instruct". */
  baseModel: string;
}

const PREFIX = 'base_model.model.model.layers.';
const NAME = /^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.(q|k|v|o|gate|up|down)_proj\.lora_(A|B)\.weight$/;

export function peftTensorName(layer: number, module: LoraModule, which: 'A' | 'B'): string {
  return `${PREFIX}${layer}.${MODULE_PARENT[module]}.${module}.lora_${which}.weight`;
}

/** A LoRA adapter as PEFT's folder (adapter_config.json and adapter_model.safetensors, PEFT's tensor names), for `PeftModel.from_pretrained` on `options.baseModel`. */
export function exportPeftAdapter(adapter: LoraAdapter, options: PeftExportOptions): PeftFolder {
  if (typeof options?.baseModel !== 'string' || options.baseModel.length === 0) throw new InvalidInputError('baseModel', 'must name the base model (hub id or path).');
  const { r, alpha, targetModules, useRslora } = adapter.config;
  const tensors: Array<{ name: string; shape: number[]; data: Float32Array }> = [];
  const layers: number[] = [];
  adapter.layers.forEach((layer, i) => {
    let any = false;
    for (const module of LORA_MODULES) {
      const pair = layer[module];
      if (!pair) continue;
      any = true;
      tensors.push({ name: peftTensorName(i, module, 'A'), shape: [r, pair.inDim], data: pair.A });
      tensors.push({ name: peftTensorName(i, module, 'B'), shape: [pair.outDim, r], data: pair.B });
    }
    if (any) layers.push(i);
  });
  const config = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: options.baseModel,
    r,
    lora_alpha: alpha,
    target_modules: targetModules,
    lora_dropout: 0,
    bias: 'none',
    fan_in_fan_out: false,
    use_rslora: useRslora,
    use_dora: false,
    init_lora_weights: true,
    inference_mode: true,
    modules_to_save: null,
    layers_to_transform: layers.length === adapter.layers.length ? null : layers,
    rank_pattern: {},
    alpha_pattern: {},
    revision: null,
  };
  return {
    [PEFT_CONFIG_FILE]: `${JSON.stringify(config, null, 2)}\n`,
    [PEFT_WEIGHTS_FILE]: writeSafetensors(tensors, { format: 'pt' }),
  };
}

/** Where a run's model came from, as `peftBaseModel` tells it. */
export type PeftBaseSource = 'hub' | 'local' | 'bundled';

const BUNDLED = /(?:^|[\\/])models[\\/](webgrpo-[a-z]+)[\\/]?$/;
const HUB_ID = /^(?:[\w\-.]+\/)?[\w\-.]+$/;

/**
 * `base_model_name_or_path` for a run's model (`run.config.policy.model`) and what a user must know
 * about it: a hub id is kept (`AutoPeftModelForCausalLM` loads it; an ONNX conversion whose repo
 * has no PyTorch weights needs the original's id instead); a local folder is kept as its path,
 * which means nothing on another machine; the bundled models have ONNX weights only, so
 * transformers has no base to put the adapter on (webgrpo reads it back with `importPeftAdapter`).
 */
export function peftBaseModel(model: string): { baseModel: string; source: PeftBaseSource; note?: string } {
  const bundled = BUNDLED.exec(model);
  if (bundled) {
    return {
      baseModel: bundled[1],
      source: 'bundled',
      note: `${bundled[1]} is a bundled model with ONNX weights only: transformers cannot load it, so no PEFT base takes this adapter (webgrpo reads it back with importPeftAdapter).`,
    };
  }
  const local = /^(?:[./~]|[A-Za-z]:[\\/])/.test(model) || model.includes('\\') || !HUB_ID.test(model);
  if (local) {
    return { baseModel: model, source: 'local', note: `${model} is a local folder: on another machine load the base yourself and call PeftModel.from_pretrained(model, folder), or name its hub id as the base model.` };
  }
  const conversion = /^(onnx-community|Xenova)\//.test(model);
  return {
    baseModel: model,
    source: 'hub',
    ...(conversion ? { note: `${model} is an ONNX conversion: if its repository has no PyTorch weights, name the model it was converted from as the base model.` } : {}),
  };
}

/** Reads a PEFT LoRA folder for a model of `shape`; throws typed errors on anything it cannot use exactly. */
export function importPeftAdapter(folder: { [PEFT_CONFIG_FILE]: string | Record<string, unknown>; [PEFT_WEIGHTS_FILE]: Uint8Array }, shape: DecoderShape): LoraAdapter {
  const config = parseConfig(folder[PEFT_CONFIG_FILE]);
  const file = readSafetensors(folder[PEFT_WEIGHTS_FILE]);
  const layers: Array<Partial<Record<LoraModule, LoraPair>>> = Array.from({ length: shape.numLayers }, () => ({}));
  const halves = new Map<string, { A?: Float32Array; B?: Float32Array }>();
  const present = new Set<LoraModule>();
  for (const [name, tensor] of file.tensors) {
    const match = NAME.exec(name);
    if (!match) {
      if (/lora_embedding|modules_to_save|\.bias$|lora_magnitude/.test(name)) throw new UnsupportedError(`${PEFT_WEIGHTS_FILE}: ${name} is not a LoRA projection weight this engine trains (embeddings, biases, DoRA and saved modules are not supported).`);
      throw new InvalidInputError(PEFT_WEIGHTS_FILE, `unexpected tensor ${name}; PEFT names look like ${peftTensorName(0, 'q_proj', 'A')}.`);
    }
    const layer = Number(match[1]);
    const module = `${match[3]}_proj` as LoraModule;
    const which = match[4] as 'A' | 'B';
    if (MODULE_PARENT[module] !== match[2]) throw new InvalidInputError(PEFT_WEIGHTS_FILE, `${name}: ${module} belongs under ${MODULE_PARENT[module]}.`);
    if (layer >= shape.numLayers) throw new InvalidInputError(PEFT_WEIGHTS_FILE, `${name}: layer ${layer} is past the model's ${shape.numLayers} layers.`);
    const { inDim, outDim } = moduleDims(shape, module);
    const want = which === 'A' ? [config.r, inDim] : [outDim, config.r];
    if (tensor.shape.length !== 2 || tensor.shape[0] !== want[0] || tensor.shape[1] !== want[1]) {
      throw new InvalidInputError(PEFT_WEIGHTS_FILE, `${name} is [${tensor.shape.join(', ')}]; r = ${config.r} on this model needs [${want.join(', ')}].`);
    }
    const key = `${layer}.${module}`;
    halves.set(key, { ...halves.get(key), [which]: tensor.data });
    present.add(module);
  }
  if (halves.size === 0) throw new InvalidInputError(PEFT_WEIGHTS_FILE, 'holds no LoRA weights.');
  for (const [key, { A, B }] of halves) {
    if (!A || !B) throw new InvalidInputError(PEFT_WEIGHTS_FILE, `layer ${key} has lora_${A ? 'B' : 'A'} missing.`);
    const [layer, module] = key.split('.') as [string, LoraModule];
    const { inDim, outDim } = moduleDims(shape, module);
    layers[Number(layer)][module] = { inDim, outDim, A, B };
  }
  const targetModules = LORA_MODULES.filter((m) => present.has(m));
  if (config.targets !== 'any') {
    const stray = targetModules.filter((m) => !config.targets.includes(m));
    if (stray.length > 0) throw new InvalidInputError(PEFT_CONFIG_FILE, `target_modules does not list ${stray.join(', ')}, whose weights the file holds.`);
  }
  const resolved: LoraConfig = { r: config.r, alpha: config.alpha, targetModules, useRslora: config.useRslora };
  return { config: resolved, scale: loraScale(resolved), layers };
}

interface PeftConfig {
  r: number;
  alpha: number;
  useRslora: boolean;
  /** Module names listed, or 'any' for a pattern ("all-linear", a regex) that the tensor names resolve. */
  targets: string[] | 'any';
}

function parseConfig(source: string | Record<string, unknown>): PeftConfig {
  let raw: unknown = source;
  if (typeof source === 'string') {
    try {
      raw = JSON.parse(source);
    } catch (cause) {
      throw new ParseError(`${PEFT_CONFIG_FILE} is not JSON.`, { cause });
    }
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ParseError(`${PEFT_CONFIG_FILE} is not a JSON object.`);
  const c = raw as Record<string, unknown>;
  const field = (name: string) => `${PEFT_CONFIG_FILE}: ${name}`;
  if (c.peft_type !== 'LORA') throw new UnsupportedError(`${field('peft_type')} is ${JSON.stringify(c.peft_type)}; only "LORA" adapters are read.`);
  if (c.task_type !== undefined && c.task_type !== null && c.task_type !== 'CAUSAL_LM') throw new UnsupportedError(`${field('task_type')} is ${JSON.stringify(c.task_type)}; a decoder adapter is CAUSAL_LM.`);
  if (!Number.isInteger(c.r) || (c.r as number) < 1) throw new InvalidInputError(field('r'), `must be an integer >= 1, got ${JSON.stringify(c.r)}.`);
  const alpha = c.lora_alpha ?? c.r;
  if (typeof alpha !== 'number' || !(alpha > 0)) throw new InvalidInputError(field('lora_alpha'), `must be a number > 0, got ${JSON.stringify(alpha)}.`);
  if (c.use_dora === true) throw new UnsupportedError(`${field('use_dora')} is true; DoRA adapters are not supported.`);
  if (c.fan_in_fan_out === true) throw new UnsupportedError(`${field('fan_in_fan_out')} is true; Llama-family Linear layers store [out, in].`);
  if (c.bias !== undefined && c.bias !== 'none') throw new UnsupportedError(`${field('bias')} is ${JSON.stringify(c.bias)}; only "none" (frozen biases) is supported.`);
  const nonEmpty = (v: unknown) => v !== undefined && v !== null && (Array.isArray(v) ? v.length > 0 : typeof v === 'object' ? Object.keys(v).length > 0 : true);
  for (const key of ['rank_pattern', 'alpha_pattern', 'modules_to_save']) {
    if (nonEmpty(c[key])) throw new UnsupportedError(`${field(key)} is set; per-module ranks and saved modules are not supported.`);
  }
  const targets = c.target_modules;
  let list: string[] | 'any';
  if (typeof targets === 'string') list = 'any';
  else if (Array.isArray(targets) && targets.every((t) => typeof t === 'string')) list = targets as string[];
  else throw new InvalidInputError(field('target_modules'), 'must be a list of module names or a pattern string.');
  return { r: c.r as number, alpha, useRslora: c.use_rslora === true, targets: list };
}
