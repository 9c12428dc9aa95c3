/**
 * Sessions made from a model's inline weights as external data viewed in its own bytes
 * (session-from-views.ts, what a page's load wraps transformers.js in): the same logits as from the
 * bytes, the weights handed over as views of those bytes (no copy), anything else passed through
 * as it is, and the factory restored once the last wrapped call ends. On onnxruntime-node here, on
 * onnxruntime-web in hub-layouts-browser.test.ts.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { asExternalViews, withSessionsFromViews } from '../../lib/policy/onnx/session-from-views.js';
import { TINY_DIR } from './fixtures.js';

const bytes = new Uint8Array(await readFile(join(TINY_DIR, 'onnx', 'model.onnx')));
const config = JSON.parse(await readFile(join(TINY_DIR, 'config.json'), 'utf8')) as Record<string, number>;

function feeds(session: ort.InferenceSession): Record<string, ort.Tensor> {
  const headDim = config.head_dim ?? config.hidden_size / config.num_attention_heads;
  const out: Record<string, ort.Tensor> = {};
  for (const name of session.inputNames) {
    if (name === 'input_ids') out[name] = new ort.Tensor('int64', BigInt64Array.from([3n, 7n, 11n]), [1, 3]);
    else if (name === 'attention_mask') out[name] = new ort.Tensor('int64', BigInt64Array.from([1n, 1n, 1n]), [1, 3]);
    else if (name === 'position_ids') out[name] = new ort.Tensor('int64', BigInt64Array.from([0n, 1n, 2n]), [1, 3]);
    else out[name] = new ort.Tensor('float32', new Float32Array(0), [1, config.num_key_value_heads, 0, headDim]);
  }
  return out;
}

describe('sessions made from the weights viewed in the model bytes', () => {
  it('give the logits the bytes give, the weights handed over as views of those bytes', async () => {
    const { graph, externalData } = await asExternalViews(bytes);
    expect(graph.length).toBeLessThan(bytes.length / 4);
    expect(externalData.length).toBeGreaterThan(0);
    expect(externalData.every(({ data }) => data.buffer === bytes.buffer)).toBe(true);
    const fromBytes = await ort.InferenceSession.create(bytes);
    const fromViews = await ort.InferenceSession.create(graph, { externalData });
    const input = feeds(fromBytes);
    expect((await fromViews.run(input)).logits.data).toEqual((await fromBytes.run(input)).logits.data);
    await fromBytes.release();
    await fromViews.release();
  });

  it('wrap the factory while the call runs, pass other models through, and restore it after', async () => {
    const asked: Array<{ model: unknown; external: number }> = [];
    const factory = {
      create: async (model: unknown, options?: Record<string, unknown>) => {
        asked.push({ model, external: Array.isArray(options?.externalData) ? options.externalData.length : 0 });
        return model;
      },
    };
    const own = factory.create;
    const notOnnx = Uint8Array.from([1, 2, 3, 4, 5]);
    await withSessionsFromViews(factory, async () => {
      // Nested and overlapping calls share one wrap.
      await Promise.all([withSessionsFromViews(factory, () => factory.create(bytes)), factory.create(notOnnx), factory.create('model.onnx'), factory.create(bytes, { externalData: [{ path: 'x', data: bytes }] })]);
    });
    expect(factory.create).toBe(own);
    // By identity (deep equality would walk the model's megabytes).
    const label = (model: unknown) => (model === bytes ? 'bytes' : model === notOnnx ? 'not onnx' : model === 'model.onnx' ? 'path' : 'graph');
    expect(asked.map(({ model, external }) => `${label(model)}: ${external > 0 ? 'external' : 'inline'}`).sort()).toEqual(['bytes: external', 'graph: external', 'not onnx: inline', 'path: inline']);
    const graph = asked.find(({ model }) => label(model) === 'graph')!.model as Uint8Array;
    expect(graph.length).toBeLessThan(bytes.length / 4);
  });
});
