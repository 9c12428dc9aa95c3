/**
 * A LoRA run holds the frozen weights once on the JavaScript side: the model file's bytes, read
 * for the weights, are not kept afterwards by the policy nor by loraModel's result, so the engine's
 * weights are the only copy beside the sampler's session. The policy reads its files again when
 * asked after that.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { loraModel } from '../../lib/train/lora-engine.js';
import { TINY_DIR } from '../onnx/fixtures.js';

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
