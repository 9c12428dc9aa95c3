/**
 * The decoder found in the graph by its structure: for every export style (names as webgrpo's
 * builder, Optimum and onnxruntime-genai write them), in fp32, fp16 and 4-bit, every weight found
 * equals the one the export was written from; renaming every node and tensor changes nothing; a
 * graph without a part is a ModelLoadError naming that part.
 */
import onnxProto from 'onnx-proto';
import { describe, expect, it } from 'vitest';
import { ModelLoadError } from '../../lib/errors.js';
import { PROJECTIONS, type FoundDecoder, type FoundProjection } from '../../lib/policy/onnx/structure/decoder.js';
import { findDecoder } from '../../lib/policy/onnx/structure/find-decoder.js';
import { dequantize } from '../../lib/policy/onnx/structure/read-weights.js';
import type { LayerWeights } from '../../scripts/build-model/weights.js';
import { buildExport, STYLES, type Export } from './exports.js';

const { onnx } = onnxProto;

const SOURCE: Record<(typeof PROJECTIONS)[number], keyof LayerWeights> = {
  q_proj: 'q',
  k_proj: 'k',
  v_proj: 'v',
  o_proj: 'o',
  gate_proj: 'gate',
  up_proj: 'up',
  down_proj: 'down',
};

function maxError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}

function maxAbs(a: ArrayLike<number>): number {
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i]));
  return max;
}

function expectFound(found: FoundDecoder, ex: Export): void {
  const { spec, weights } = ex;
  // fp16 rounds each weight to 11 significant bits; 4-bit to half a block's step (max / 7).
  const tolerance = (w: ArrayLike<number>) => (spec.weights === 'fp16' ? maxAbs(w) * 2 ** -11 : 0);
  expect(found.shape).toEqual({
    vocabSize: ex.vocabSize,
    hiddenSize: spec.hiddenSize,
    intermediateSize: spec.intermediateSize,
    numLayers: spec.numLayers,
    numHeads: spec.numHeads,
    numKvHeads: spec.numKvHeads,
    headDim: spec.headDim,
    ropeTheta: spec.ropeTheta,
    rmsNormEps: spec.rmsNormEps,
  });
  expect(found.attention).toBe(spec.graph === 'genai' ? 'GroupQueryAttention' : 'decomposed');
  expect(maxError(found.embedding, weights.embedTokens)).toBeLessThanOrEqual(tolerance(weights.embedTokens));
  expect(maxError(found.finalNorm, weights.finalNorm)).toBeLessThanOrEqual(tolerance(weights.finalNorm));
  if (weights.lmHead) expect(maxError(found.lmHead!, weights.lmHead)).toBeLessThanOrEqual(tolerance(weights.lmHead));
  else expect(found.lmHead).toBeUndefined();
  found.layers.forEach((layer, i) => {
    const source = weights.layers[i];
    expect(maxError(layer.inputNorm, source.inputNorm)).toBeLessThanOrEqual(tolerance(source.inputNorm));
    expect(maxError(layer.postNorm, source.postNorm)).toBeLessThanOrEqual(tolerance(source.postNorm));
    for (const [norm, want] of [[layer.qNorm, source.qNorm], [layer.kNorm, source.kNorm]] as const) {
      if (want) expect(maxError(norm!, want)).toBeLessThanOrEqual(tolerance(want));
      else expect(norm).toBeUndefined();
    }
    for (const name of PROJECTIONS) {
      const p: FoundProjection = layer[name];
      const want = source[SOURCE[name]]!;
      if (!(p.weight instanceof Float32Array) && p.weight.kind !== 'q4') throw new Error('findDecoder widens fp16 unless asked to keep it');
      const weight = p.weight instanceof Float32Array ? p.weight : dequantize(p.weight);
      expect(p.weight instanceof Float32Array).toBe(spec.weights !== 'q4');
      const bound = spec.weights === 'q4' ? (maxAbs(want) / 7) * 0.5 * 1.0001 : tolerance(want);
      expect(maxError(weight, want), `layer ${i} ${name}`).toBeLessThanOrEqual(bound);
      const bias = name === 'q_proj' ? source.qBias : name === 'k_proj' ? source.kBias : name === 'v_proj' ? source.vBias : undefined;
      if (bias) expect(maxError(p.bias!, bias)).toBeLessThanOrEqual(tolerance(bias));
      else expect(p.bias).toBeUndefined();
    }
  });
}

/** Every node unnamed and every tensor but the graph's inputs and outputs renamed `t<n>`. */
function anonymize(bytes: Uint8Array): Uint8Array {
  const model = onnx.ModelProto.decode(bytes);
  const graph = model.graph as onnxProto.onnx.GraphProto;
  const keep = new Set([...graph.input, ...graph.output].map((v) => v.name));
  const names = new Map<string, string>();
  const rename = (name: string) => {
    if (!name || keep.has(name)) return name;
    if (!names.has(name)) names.set(name, `t${names.size}`);
    return names.get(name)!;
  };
  for (const t of graph.initializer as onnxProto.onnx.TensorProto[]) t.name = rename(t.name);
  for (const node of graph.node as onnxProto.onnx.NodeProto[]) {
    node.name = '';
    node.input = node.input.map(rename);
    node.output = node.output.map(rename);
  }
  return onnx.ModelProto.encode(model).finish();
}

/** The graph with one op type replaced by another (one node, or all). */
function replaceOp(bytes: Uint8Array, from: string, to: string): Uint8Array {
  const model = onnx.ModelProto.decode(bytes);
  for (const node of (model.graph as onnxProto.onnx.GraphProto).node) if (node.opType === from) node.opType = to;
  return onnx.ModelProto.encode(model).finish();
}

/**
 * Every MatMul weight stored as PyTorch keeps it, [out, in], behind a Transpose (an export without
 * constant folding), or read by Gemm with transB (how torch.onnx writes a Linear on 2-D inputs).
 */
function transposeWeights(bytes: Uint8Array, as: 'Transpose' | 'Gemm'): Uint8Array {
  const model = onnx.ModelProto.decode(bytes);
  const graph = model.graph as onnxProto.onnx.GraphProto;
  const initializers = new Map((graph.initializer as onnxProto.onnx.TensorProto[]).map((t) => [t.name, t]));
  const nodes: onnxProto.onnx.INodeProto[] = [];
  for (const node of graph.node as onnxProto.onnx.NodeProto[]) {
    const weight = node.opType === 'MatMul' ? initializers.get(node.input[1]) : undefined;
    if (!weight || weight.dims.length !== 2 || weight.dataType !== 1) {
      nodes.push(node);
      continue;
    }
    const [rows, cols] = weight.dims.map(Number);
    const data = new Float32Array(Uint8Array.from(weight.rawData).buffer);
    const t = new Float32Array(data.length);
    for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) t[j * rows + i] = data[i * cols + j];
    weight.dims = [cols, rows];
    weight.rawData = new Uint8Array(t.buffer);
    if (as === 'Gemm') {
      nodes.push({ ...node, opType: 'Gemm', attribute: [{ name: 'transB', type: onnx.AttributeProto.AttributeType.INT, i: 1 }] });
    } else {
      nodes.push({ opType: 'Transpose', input: [weight.name], output: [`${weight.name}/T`], attribute: [{ name: 'perm', type: onnx.AttributeProto.AttributeType.INTS, ints: [1, 0] }] });
      nodes.push({ ...node, input: [node.input[0], `${weight.name}/T`] });
    }
  }
  graph.node = nodes.map((n) => onnx.NodeProto.create(n));
  return onnx.ModelProto.encode(model).finish();
}

describe('findDecoder', () => {
  for (const [label, overrides] of STYLES) {
    it(`finds every weight of ${label}`, () => {
      const ex = buildExport(overrides);
      expectFound(findDecoder(ex.graph, { config: ex.config }), ex);
    });
  }

  it('reads a graph whose every node and tensor is renamed exactly as the named one', () => {
    for (const overrides of [{ names: 'exporter' as const, qkvBias: true, tieWordEmbeddings: false }, { names: 'exporter' as const, graph: 'genai' as const, qkNorm: true }]) {
      const ex = buildExport(overrides);
      expectFound(findDecoder(anonymize(ex.graph), { config: ex.config }), ex);
    }
  });

  it('reads weights stored [out, in], behind a Transpose or under Gemm transB', () => {
    for (const as of ['Transpose', 'Gemm'] as const) {
      const ex = buildExport({ names: 'exporter', tieWordEmbeddings: false, qkvBias: true });
      expectFound(findDecoder(transposeWeights(ex.graph, as), { config: ex.config }), ex);
    }
  });

  it("holds no view of the model file: every weight read, 4-bit blocks included, has its own bytes, so the file can be freed", () => {
    for (const weights of ['fp32', 'fp16', 'q4'] as const) {
      const ex = buildExport({ names: 'exporter', weights, tieWordEmbeddings: false });
      const found = findDecoder(ex.graph, { config: ex.config });
      const arrays: Array<Float32Array | Uint16Array | Uint8Array> = [found.embedding, found.finalNorm, found.lmHead!];
      for (const layer of found.layers) {
        arrays.push(layer.inputNorm, layer.postNorm);
        for (const name of PROJECTIONS) {
          const w = layer[name].weight;
          arrays.push(...(w instanceof Float32Array ? [w] : w.kind === 'float16' ? [w.bits] : [w.packed, w.scales, ...(w.zeroPoints ? [w.zeroPoints] : [])]));
        }
      }
      expect(arrays.filter((a) => a.buffer === ex.graph.buffer), weights).toEqual([]);
    }
  });

  it('names the part it did not find', () => {
    const ex = buildExport({ names: 'exporter' });
    const fails = (graph: Uint8Array, part: RegExp) => {
      let error: unknown;
      try {
        findDecoder(graph, { config: ex.config });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ModelLoadError);
      expect((error as Error).message).toMatch(part);
    };
    fails(replaceOp(ex.graph, 'Sigmoid', 'Tanh'), /Layer 0: part not found: the SiLU gate/);
    fails(replaceOp(ex.graph, 'Neg', 'Identity'), /Layer 0: part not found: the rotary embedding/);
    fails(replaceOp(ex.graph, 'Softmax', 'Identity'), /Layer 0: two projections reach attention as k/);
    fails(replaceOp(ex.graph, 'Gather', 'GatherElements'), /Part not found: the embedding/);
    expect(() => findDecoder(ex.graph, { config: { ...ex.config, num_hidden_layers: 3 } })).toThrow(/num_hidden_layers 3; the graph has 2/);
    expect(() => findDecoder(Uint8Array.of(0x0a, 0xff, 0xff), { config: ex.config })).toThrow(ModelLoadError);
  });
});
