/**
 * The scale benches' models: random weights in the hub's small instruct models' exact shapes (the
 * builder's table, scripts/build-model/hub.ts, from their published config.json files), built on
 * demand into build/models/hub-shape/<name> (gitignored) as one graph file each, its weights
 * inline while they fit a protobuf, with the benches' own seed and position table (8192), so
 * their numbers stay comparable run to run whatever the builder's hub folders hold.
 */
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { buildModel, HUB_SHAPES, MODEL_FILES, type HubName, type ModelSpec } from '../build-model/index.js';

export type BenchDtype = 'fp32' | 'fp16' | 'q4';

export async function hubShapeSpec(name: string, dtype: BenchDtype = 'fp32'): Promise<{ spec: ModelSpec; dir: string }> {
  if (!(name in HUB_SHAPES)) throw new Error(`Unknown hub shape "${name}". Known: ${Object.keys(HUB_SHAPES).join(', ')}.`);
  const spec: ModelSpec = { ...HUB_SHAPES[name as HubName].spec, seed: 20261206, maxPositionEmbeddings: 8192, stopsAtEndTokens: false, weights: dtype };
  return { spec, dir: `build/models/hub-shape/${name}${dtype === 'fp32' ? '' : `-${dtype}`}` };
}

/** The hub shape's model folder, built on first use, with its model file and that file's size. */
export async function hubShapeModel(name: string, dtype: BenchDtype): Promise<{ dir: string; file: string; modelBytes: number }> {
  const { spec, dir } = await hubShapeSpec(name, dtype);
  const file = join(dir, MODEL_FILES[dtype]);
  if (!existsSync(file)) await buildModel(spec, dir);
  return { dir, file, modelBytes: (await stat(file)).size };
}

/** `fn`'s value and the process's CPU milliseconds (user + system) it took. */
export async function cpuTimed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const c0 = process.cpuUsage();
  const value = await fn();
  const c = process.cpuUsage(c0);
  return [value, (c.user + c.system) / 1000];
}
