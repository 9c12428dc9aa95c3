/**
 * Model folders for the hidden-state tests, and the LM-head weights read back from their files:
 *
 * - the bundled model (tied head: MatMul(h, Transpose(embed)));
 * - the onnx tests' second shape (untied `lm_head.weight`, `num_logits_to_keep` slicing before it);
 * - that model rewritten the way Optimum/onnx-community q4 exports look at the top: a 4-bit
 *   `MatMulNBits` head (com.microsoft) whose output goes through a `Cast` to `logits`, with every
 *   weight in an external `model.onnx_data` file.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import { buildOtherModel, TINY_DIR } from '../onnx/fixtures.js';

const { onnx } = onnxProto;
type Model = onnxProto.onnx.ModelProto;
type Graph = onnxProto.onnx.GraphProto;
type Tensor = onnxProto.onnx.TensorProto;

export { TINY_DIR, buildOtherModel };

async function readModel(dir: string): Promise<Model> {
  return onnx.ModelProto.decode(new Uint8Array(await readFile(join(dir, 'onnx/model.onnx'))));
}

function floats(tensor: onnxProto.onnx.ITensorProto, data?: Uint8Array): Float32Array {
  const raw = data ?? tensor.rawData!;
  return new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
}

/** The head as a dense [hidden, vocab] matrix, whatever form the file keeps it in. */
export interface HeadWeights {
  hidden: number;
  vocab: number;
  /** w[i * vocab + j]: logits_j = sum_i h_i w[i, j]. */
  w: Float32Array;
}

export async function tiedHead(dir: string): Promise<HeadWeights> {
  const model = await readModel(dir);
  const embed = (model.graph as Graph).initializer.find((t) => t.name === 'model.embed_tokens.weight') as Tensor;
  const [vocab, hidden] = embed.dims.map(Number);
  const e = floats(embed);
  const w = new Float32Array(hidden * vocab);
  for (let j = 0; j < vocab; j++) for (let i = 0; i < hidden; i++) w[i * vocab + j] = e[j * hidden + i];
  return { hidden, vocab, w };
}

export async function untiedHead(dir: string): Promise<HeadWeights> {
  const model = await readModel(dir);
  const head = (model.graph as Graph).initializer.find((t) => t.name === 'lm_head.weight') as Tensor;
  const [hidden, vocab] = head.dims.map(Number);
  return { hidden, vocab, w: floats(head) };
}

const BLOCK = 32;

/**
 * Rewrites the untied model in `dir` in place into the q4-export shape described above. Returns the
 * head as the runtime sees it (the dequantized 4-bit weights).
 */
export async function makeOptimumShaped(dir: string): Promise<HeadWeights> {
  const model = await readModel(dir);
  const graph = model.graph as Graph;
  const { hidden, vocab, w } = await untiedHead(dir);
  const blocks = Math.ceil(hidden / BLOCK);

  // Symmetric 4-bit blocks along K per output column n, zero point 8 (MatMulNBits' default).
  const packed = new Uint8Array(vocab * blocks * (BLOCK / 2));
  const scales = new Float32Array(vocab * blocks);
  const dequantized = new Float32Array(hidden * vocab);
  for (let n = 0; n < vocab; n++) {
    for (let b = 0; b < blocks; b++) {
      let max = 0;
      for (let k = b * BLOCK; k < Math.min(hidden, (b + 1) * BLOCK); k++) max = Math.max(max, Math.abs(w[k * vocab + n]));
      const scale = max / 7 || 1;
      scales[n * blocks + b] = scale;
      for (let q = 0; q < BLOCK; q++) {
        const k = b * BLOCK + q;
        const value = k < hidden ? Math.max(-8, Math.min(7, Math.round(w[k * vocab + n] / scale))) : 0;
        const byte = (n * blocks + b) * (BLOCK / 2) + (q >> 1);
        packed[byte] |= (value + 8) << (q & 1 ? 4 : 0);
        if (k < hidden) dequantized[k * vocab + n] = value * Math.fround(scale);
      }
    }
  }

  const head = graph.node.findIndex((node) => node.output?.[0] === 'logits');
  const input = graph.node[head].input![0];
  graph.initializer = graph.initializer.filter((t) => t.name !== 'lm_head.weight');
  graph.initializer.push(
    { name: 'lm_head.qweight', dims: [vocab, blocks, BLOCK / 2], dataType: onnx.TensorProto.DataType.UINT8, rawData: packed },
    { name: 'lm_head.scales', dims: [vocab * blocks], dataType: onnx.TensorProto.DataType.FLOAT, rawData: new Uint8Array(scales.buffer) },
  );
  const attribute = (name: string, i: number) => ({ name, type: onnx.AttributeProto.AttributeType.INT, i });
  graph.node.splice(
    head,
    1,
    {
      name: '/lm_head/MatMul_Q4',
      opType: 'MatMulNBits',
      domain: 'com.microsoft',
      input: [input, 'lm_head.qweight', 'lm_head.scales'],
      output: ['lm_head_output'],
      attribute: [attribute('K', hidden), attribute('N', vocab), attribute('bits', 4), attribute('block_size', BLOCK)],
    },
    { name: '/lm_head/Cast', opType: 'Cast', input: ['lm_head_output'], output: ['logits'], attribute: [attribute('to', onnx.TensorProto.DataType.FLOAT)] },
  );
  model.opsetImport.push({ domain: 'com.microsoft', version: 1 });

  // Every initializer's bytes to model.onnx_data, as large exports keep them.
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (const tensor of graph.initializer) {
    const data = tensor.rawData;
    if (!data || data.length === 0) continue;
    chunks.push(data);
    tensor.externalData = [
      { key: 'location', value: 'model.onnx_data' },
      { key: 'offset', value: String(offset) },
      { key: 'length', value: String(data.length) },
    ];
    tensor.dataLocation = onnx.TensorProto.DataLocation.EXTERNAL;
    tensor.rawData = new Uint8Array(0);
    offset += data.length;
  }
  const data = new Uint8Array(offset);
  let at = 0;
  for (const chunk of chunks) {
    data.set(chunk, at);
    at += chunk.length;
  }
  await writeFile(join(dir, 'onnx/model.onnx'), onnx.ModelProto.encode(model).finish());
  await writeFile(join(dir, 'onnx/model.onnx_data'), data);
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
  config['transformers.js_config'] = { ...config['transformers.js_config'], use_external_data_format: true };
  await writeFile(join(dir, 'config.json'), JSON.stringify(config, null, 2));
  return { hidden, vocab, w: dequantized };
}
