/**
 * Puts a trained adapter on a policy for sampling and scoring, without a trainer: the weights are
 * copied to where the policy's logits are (GPU buffers on WebGPU, host memory otherwise).
 */
import { InvalidInputError } from '../../errors.js';
import type { HeadAdapterWeights } from '../../policy/head-adapter.js';
import type { TrainablePolicy } from '../trainable-policy.js';
import type { HeadAdapterBinding } from '../../policy/onnx/webgpu-adapter.js';
import { BufferUsage } from '../../policy/onnx/webgpu-types.js';
import { readAdapterFile, type AdapterFile } from './format.js';

export interface AttachedAdapter {
  /** Takes the adapter off (if it is still the policy's) and frees its copy of the weights. */
  detach(): void;
}

/** `adapter`: an adapter file, its JSON text, or weights. */
export function attachAdapter(policy: Pick<TrainablePolicy, 'head'>, adapter: AdapterFile | string | HeadAdapterWeights): AttachedAdapter {
  const head = policy?.head;
  if (!head) throw new InvalidInputError('policy', 'has no trainable head; load it with loadOnnxPolicy({ model, hiddenState: true }).');
  const weights = typeof adapter === 'string' || 'format' in adapter ? readAdapterFile(adapter) : adapter;
  const { hiddenSize, vocabSize, rank, scale } = weights;
  let binding: HeadAdapterBinding;
  let free = () => {};
  if (head.kind === 'gpu') {
    const device = head.device!;
    const upload = (data: Float32Array, label: string) => {
      const buffer = device.createBuffer({ size: Math.max(16, data.byteLength), usage: BufferUsage.STORAGE | BufferUsage.COPY_DST, label });
      device.queue.writeBuffer(buffer, 0, data);
      return buffer;
    };
    const a = upload(weights.a, 'webgrpo adapter A');
    const b = upload(weights.b, 'webgrpo adapter B');
    binding = { kind: 'gpu', hiddenSize, vocabSize, rank, scale, a, b };
    free = () => {
      a.destroy();
      b.destroy();
    };
  } else {
    binding = { kind: 'host', hiddenSize, vocabSize, rank, scale, a: weights.a.slice(), b: weights.b.slice() };
  }
  try {
    head.setAdapter(binding);
  } catch (error) {
    free();
    throw error;
  }
  let attached = true;
  return {
    detach() {
      if (!attached) return;
      attached = false;
      if (head.adapter === binding) head.setAdapter(undefined);
      free();
    },
  };
}
