/**
 * The adapted model as ONNX bytes, for the sampler: every adapted projection's initializer is
 * replaced by the merged weight W + s A^T B^T (in the MatMul's [in, out] layout), in its own data
 * type (fp32, or fp16 rounded to nearest). A session built from these bytes samples from the
 * adapted model with no extra work per token; the cost is paid once per update (this rewrite
 * plus building the session), measured in BENCHMARKS.md.
 *
 * Only the replaced initializers are decoded and re-encoded; every other field of the model
 * (nodes, other weights, external-data references) is copied as bytes, in its order.
 */
import { ModelLoadError, UnsupportedError } from '../errors.js';
import { concat, fieldHeader, fields, findField, LENGTH_DELIMITED } from '../policy/onnx/protobuf.js';
import type { LoraAdapter } from './adapter.js';
import { floatToHalf } from '../policy/onnx/half.js';
import { floatWeight, LORA_MODULES, type DecoderWeights } from '../weights/decoder.js';

const MODEL_GRAPH = 7;
const GRAPH_INITIALIZER = 5;
const FLOAT = 1;
const FLOAT16 = 10;

/** The merged weight of every adapted projection, by initializer name ([in, out], float32). */
export function mergedWeights(weights: DecoderWeights, adapter: LoraAdapter): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  adapter.layers.forEach((layer, l) => {
    for (const module of LORA_MODULES) {
      const pair = layer[module];
      if (!pair) continue;
      const p = weights.layers[l][module];
      if (!p.initializer) throw new ModelLoadError(`Layer ${l} ${module} was not read from an ONNX initializer, so there is nothing to merge into.`);
      const base = floatWeight(p.weight);
      if (!base) {
        throw new UnsupportedError(`Layer ${l} ${module} is 4-bit: merging would requantize the adapter away. Sample from the fp32 or fp16 export with the merged weights.`);
      }
      const r = adapter.config.r;
      const { inDim, outDim } = p;
      // W' = W + (s A^T) B^T: [in, r] times [r, out], added in place into a copy of W.
      const scaledAt = new Float64Array(inDim * r);
      for (let j = 0; j < r; j++) for (let i = 0; i < inDim; i++) scaledAt[i * r + j] = adapter.scale * pair.A[j * inDim + i];
      const Bt = new Float32Array(r * outDim);
      for (let o = 0; o < outDim; o++) for (let j = 0; j < r; j++) Bt[j * outDim + o] = pair.B[o * r + j];
      const merged = Float32Array.from(base);
      for (let i = 0; i < inDim; i++) {
        for (let j = 0; j < r; j++) {
          const a = scaledAt[i * r + j];
          for (let o = 0; o < outDim; o++) merged[i * outDim + o] += a * Bt[j * outDim + o];
        }
      }
      out.set(p.initializer, merged);
    }
  });
  return out;
}

/** `model` with the named initializers' data replaced (same dims and data type). */
export async function replaceInitializers(model: Uint8Array, replacements: Map<string, Float32Array>): Promise<Uint8Array> {
  const { onnx } = (await import('onnx-proto')).default;
  const graph = findField(model, 0, model.length, MODEL_GRAPH);
  if (!graph) throw new ModelLoadError('The ONNX file has no graph.');
  const parts: Uint8Array[] = [];
  const done = new Set<string>();
  let copiedFrom = graph.start;
  for (const field of fields(model, graph.start, graph.end)) {
    if (field.number !== GRAPH_INITIALIZER || field.wireType !== LENGTH_DELIMITED) continue;
    const body = model.subarray(field.start, field.end);
    const name = initializerName(body);
    const data = replacements.get(name);
    if (!data) continue;
    const tensor = onnx.TensorProto.decode(body);
    const count = tensor.dims.reduce((a: number, d) => a * Number(d), 1);
    if (count !== data.length) throw new ModelLoadError(`Initializer ${name} holds ${count} values; the merged weight has ${data.length}.`);
    let raw: Uint8Array;
    if (tensor.dataType === FLOAT) {
      raw = new Uint8Array(count * 4);
      const view = new DataView(raw.buffer);
      for (let i = 0; i < count; i++) view.setFloat32(i * 4, data[i], true);
    } else if (tensor.dataType === FLOAT16) {
      raw = new Uint8Array(count * 2);
      const view = new DataView(raw.buffer);
      for (let i = 0; i < count; i++) view.setUint16(i * 2, floatToHalf(data[i]), true);
    } else {
      throw new ModelLoadError(`Initializer ${name} has data type ${tensor.dataType}; merging writes fp32 and fp16 weights.`);
    }
    const encoded = onnx.TensorProto.encode({ name, dims: tensor.dims, dataType: tensor.dataType, rawData: raw }).finish();
    parts.push(model.subarray(copiedFrom, field.tagStart), fieldHeader(GRAPH_INITIALIZER, encoded.length), encoded);
    copiedFrom = field.end;
    done.add(name);
  }
  parts.push(model.subarray(copiedFrom, graph.end));
  const missing = [...replacements.keys()].filter((n) => !done.has(n));
  if (missing.length > 0) throw new ModelLoadError(`The ONNX graph has no initializer ${missing[0]} to merge into.`);
  const body = concat(parts);
  return concat([model.subarray(0, graph.tagStart), fieldHeader(MODEL_GRAPH, body.length), body, model.subarray(graph.end)]);
}

/** The adapted model's ONNX bytes: `replaceInitializers(model, mergedWeights(weights, adapter))`. */
export async function mergeLoraIntoOnnx(model: Uint8Array, weights: DecoderWeights, adapter: LoraAdapter): Promise<Uint8Array> {
  return replaceInitializers(model, mergedWeights(weights, adapter));
}

function initializerName(body: Uint8Array): string {
  for (const f of fields(body, 0, body.length)) if (f.number === 8 && f.wireType === LENGTH_DELIMITED) return new TextDecoder().decode(body.subarray(f.start, f.end));
  return '';
}

