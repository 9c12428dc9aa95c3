/**
 * A LoRA run holds the frozen weights once on the JavaScript side: the model file's bytes, read
 * for the weights, are not kept afterwards by the policy nor by loraModel's result, so the engine's
 * weights are the only copy beside the sampler's session. The policy reads its files again when
 * asked after that, and again in full after a LoRA head moved the embedding's piece into its session.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import * as ort from 'onnxruntime-node';
import { LoraGraphs } from '../../lib/train/graph/lora-graph-engine.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';
import { loraModel } from '../../lib/train/lora-engine.js';
import { buildModel } from '../../scripts/build-model/index.js';
import { TINY_DIR } from '../onnx/fixtures.js';
import { SMALL } from './exports.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Collects until `ref` is gone or it is plainly held (WeakRef targets live to the end of the job that read them). */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 5 && ref.deref(); i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  return ref.deref() === undefined;
}

let policy: OnnxPolicy;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: TINY_DIR });
});
afterAll(() => policy?.dispose());

describe('the model file bytes', () => {
  it('are held by nobody once loraModel has read the weights out of them', async () => {
    let files: Awaited<ReturnType<OnnxPolicy['modelGraph']>> | undefined = await policy.modelGraph();
    const bytes = new WeakRef(files.graph);
    const size = files.graph.length;
    const model = await loraModel(policy, { r: 2, seed: 1 });
    files = undefined;
    expect(await collected(bytes)).toBe(true);
    expect(model.weights.layers.length).toBeGreaterThan(0);
    // Read again on demand, the same file.
    expect((await policy.modelGraph()).graph.length).toBe(size);
  });

  it('are read once while someone holds them', async () => {
    const first = await policy.modelGraph();
    const second = await policy.modelGraph();
    expect(second.graph).toBe(first.graph);
    expect(second.externalData).toBe(first.externalData);
  });
});

describe('a head that moved its table into its session', () => {
  let root = '';
  let external: OnnxPolicy;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'webgrpo-model-bytes-'));
    await buildModel({ ...SMALL, names: 'exporter', externalData: true }, root);
    external = await loadOnnxPolicy({ model: root });
  });
  afterAll(async () => {
    await external?.dispose();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("leaves the policy's files whole: read again, they are not the pieces it released", async () => {
    // Held here, so loraModel reads the weights out of these very pieces.
    const files = await external.modelGraph();
    const model = await loraModel(external, { r: 2, seed: 1 });
    const { vocabSize: V, hiddenSize: H } = model.weights.shape;
    const lora = { r: 2, scale: model.adapter.scale, targetModules: model.adapter.config.targetModules };
    const graphs = await LoraGraphs.create(ort as unknown as GraphRuntime, model.weights, lora, { headTable: 'session' });
    // The embedding was a piece of its own, and the session now holds it.
    expect(model.weights.embedding.length).toBe(0);
    expect(Object.values(files.externalData).some((piece) => piece.byteLength === 0)).toBe(true);
    const again = await external.modelGraph();
    expect(again.externalData === files.externalData).toBe(false);
    const { weights } = await loraModel(external, { r: 2, seed: 1 });
    expect(weights.embedding.length).toBe(V * H);
    await graphs.release();
  });
});
