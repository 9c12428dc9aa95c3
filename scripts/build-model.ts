/**
 * `npm run build:model [-- --size tiny|bench] [--out DIR]`: writes a Llama-architecture
 * transformers.js model with seeded random weights, without Python or downloads.
 * tiny (default) -> public/models/webgrpo-tiny (committed); bench -> build/models/webgrpo-bench.
 *
 * `npm run build:model -- --hub smollm2-135m [--dtype q4f16,fp32 | all] [--out DIR]`: a random-weight
 * model in the exact shape of a hub model (scripts/build-model/hub.ts), in the hub's layout, into
 * build/models/hub/<name>/ (gitignored). Default dtype: all four (fp32 with external data, fp16,
 * q4, q4f16).
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildHubModel, buildModel, HUB_DTYPES, HUB_SHAPES, hubModelDir, MODEL_DIRS, PRESETS, type HubDtype, type HubName, type PresetName } from './build-model/index.js';

const { values } = parseArgs({
  options: { size: { type: 'string', default: 'tiny' }, out: { type: 'string' }, hub: { type: 'string' }, dtype: { type: 'string', default: 'all' } },
});

if (values.hub !== undefined) {
  const name = values.hub as HubName;
  if (!(name in HUB_SHAPES)) fail(`Unknown --hub "${values.hub}"; use one of ${Object.keys(HUB_SHAPES).join(', ')}.`);
  const dtypes = values.dtype === 'all' ? [...HUB_DTYPES] : (values.dtype ?? '').split(',').map((d) => d.trim());
  const unknown = dtypes.filter((d) => !(HUB_DTYPES as readonly string[]).includes(d));
  if (unknown.length > 0 || dtypes.length === 0) fail(`Unknown --dtype "${unknown.join(',')}"; use ${HUB_DTYPES.join(', ')} (comma-separated) or all.`);
  const started = Date.now();
  const built = await buildHubModel(name, dtypes as HubDtype[], values.out ?? hubModelDir(name));
  console.log(`${built.dir} (${HUB_SHAPES[name].hubId}'s shape): ${(built.parameters / 1e6).toFixed(1)}M parameters, vocabulary ${built.vocabSize}, in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  for (const file of built.files) console.log(`  ${file.padEnd(28)} ${(await stat(join(built.dir, file))).size} bytes`);
} else {
  const size = values.size as PresetName;
  if (!(size in PRESETS)) fail(`Unknown --size "${values.size}"; use ${Object.keys(PRESETS).join(' or ')}.`);
  const out = values.out ?? MODEL_DIRS[size];
  const built = await buildModel(PRESETS[size], out);
  console.log(`${built.dir}: ${(built.parameters / 1e6).toFixed(2)}M parameters, vocabulary ${built.vocabSize}, files ${built.files.join(', ')}`);
}

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}
