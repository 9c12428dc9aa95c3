/**
 * `--model` on the command line: the bundled models by name (`webgrpo-tiny`, `webgrpo-skill`,
 * folders inside the installed package that a user has no other short way to name), else a model
 * folder or a hub id as `loadOnnxPolicy` takes it. A folder of one of those names in the working
 * directory is `./webgrpo-tiny`.
 */
export async function modelPath(model: string): Promise<string> {
  if (model !== 'webgrpo-tiny' && model !== 'webgrpo-skill') return model;
  const { bundledModelPath, skillModelPath } = await import('../policy/onnx/bundled-node.js');
  return model === 'webgrpo-tiny' ? bundledModelPath() : skillModelPath();
}
