/**
 * `npm run build:model [-- --size tiny|bench] [--out DIR]`: writes a Llama-architecture
 * transformers.js model with seeded random weights, without Python or downloads.
 * tiny (default) -> public/models/webgrpo-tiny (committed); bench -> build/models/webgrpo-bench.
 */
import { parseArgs } from 'node:util';
import { buildModel, MODEL_DIRS, PRESETS, type PresetName } from './build-model/index.js';

const { values } = parseArgs({
  options: { size: { type: 'string', default: 'tiny' }, out: { type: 'string' } },
});
const size = values.size as PresetName;
if (!(size in PRESETS)) {
  console.error(`Unknown --size "${values.size}"; use ${Object.keys(PRESETS).join(' or ')}.`);
  process.exit(2);
}
const out = values.out ?? MODEL_DIRS[size];
const built = await buildModel(PRESETS[size], out);
console.log(`${built.dir}: ${(built.parameters / 1e6).toFixed(2)}M parameters, vocabulary ${built.vocabSize}, files ${built.files.join(', ')}`);
