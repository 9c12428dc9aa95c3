/**
 * The bundled tiny model (public/models/webgrpo-tiny, shipped in the npm package). In Node it is a
 * folder next to the package's code; browsers load it from the site, where `public/` is served at
 * the root.
 */

/** Where a site built with Vite (`public/` at the root) serves the bundled model. */
export const BUNDLED_MODEL_URL_PATH = '/models/webgrpo-tiny/';

// lib/policy/onnx/ and dist/policy/onnx/ both sit three levels below the package root. Kept in a
// variable so bundlers do not try to inline the folder as an asset.
const FROM_HERE = '../../../public/models/webgrpo-tiny';

/**
 * Node: resolves to the absolute path of the bundled model folder (it loads `node:url` on demand,
 * so it is async): `loadOnnxPolicy({ model: await bundledModelPath() })`.
 */
export async function bundledModelPath(): Promise<string> {
  const { fileURLToPath } = await import('node:url');
  return fileURLToPath(new URL(FROM_HERE, import.meta.url));
}

/**
 * The bundled skill model (public/models/webgrpo-skill): pretrained by scripts/pretrain to a
 * partial skill at the skill tasks (add-subtract, sort-words, count-letter, copy-format), so GRPO
 * has something to improve. Its README is the model card.
 */
export const SKILL_MODEL_URL_PATH = '/models/webgrpo-skill/';
const SKILL_FROM_HERE = '../../../public/models/webgrpo-skill';

/** Node: resolves to the absolute path of the bundled skill model folder: `loadOnnxPolicy({ model: await skillModelPath() })`. */
export async function skillModelPath(): Promise<string> {
  const { fileURLToPath } = await import('node:url');
  return fileURLToPath(new URL(SKILL_FROM_HERE, import.meta.url));
}
