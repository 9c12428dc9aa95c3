/** Node: the bundled models' folders, next to the package's code. */

// lib/policy/onnx/ and dist/policy/onnx/ both sit three levels below the package root. Kept in a
// variable so bundlers do not try to inline the folder as an asset.
const FROM_HERE = '../../../public/models/';

async function folder(name: string): Promise<string> {
  const { fileURLToPath } = await import('node:url');
  return fileURLToPath(new URL(`${FROM_HERE}${name}`, import.meta.url));
}

/** Node: resolves to the absolute path of the bundled tiny model folder: `loadOnnxPolicy({ model: await bundledModelPath() })`. */
export function bundledModelPath(): Promise<string> {
  return folder('webgrpo-tiny');
}

/** Node: resolves to the absolute path of the bundled skill model folder: `loadOnnxPolicy({ model: await skillModelPath() })`. */
export function skillModelPath(): Promise<string> {
  return folder('webgrpo-skill');
}
