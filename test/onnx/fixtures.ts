/** Shared by the onnx tests: where the bundled model is, and a second, differently shaped model. */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildModel, type ModelSpec } from '../../scripts/build-model/index.js';

export const TINY_DIR = fileURLToPath(new URL('../../public/models/webgrpo-tiny', import.meta.url));

/**
 * Not the bundled shape in any respect: multi-query attention (6 query heads share 1 kv head),
 * 3 layers, head dim 16, an untied LM head, a larger vocabulary, another rotary base, and the
 * optional `num_logits_to_keep` input.
 */
export const OTHER: ModelSpec = {
  seed: 99,
  hiddenSize: 96,
  numLayers: 3,
  numHeads: 6,
  numKvHeads: 1,
  headDim: 16,
  intermediateSize: 200,
  tieWordEmbeddings: false,
  reservedTokens: 50,
  ropeTheta: 50000,
  rmsNormEps: 1e-6,
  maxPositionEmbeddings: 512,
  logitsToKeepInput: true,
};

export async function buildOtherModel(): Promise<string> {
  const dir = join(await mkdtemp(join(tmpdir(), 'webgrpo-model-')), 'other');
  await buildModel(OTHER, dir);
  return dir;
}
