/** Shared by the LoRA tests: the bundled model's weights as the training engine reads them. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readDecoderWeights } from '../../lib/weights/read-onnx.js';
import type { DecoderWeights } from '../../lib/weights/decoder.js';

export async function readFolderWeights(dir: string): Promise<{ weights: DecoderWeights; bytes: Uint8Array; config: Record<string, unknown> }> {
  const [bytes, configText] = await Promise.all([readFile(join(dir, 'onnx/model.onnx')), readFile(join(dir, 'config.json'), 'utf8')]);
  const config = JSON.parse(configText) as Record<string, unknown>;
  const model = new Uint8Array(bytes);
  return { weights: await readDecoderWeights(model, { config }), bytes: model, config };
}
