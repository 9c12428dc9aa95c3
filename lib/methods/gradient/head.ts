/**
 * The head adapter of the gradient method: a low-rank adapter on the LM head of a frozen ONNX
 * model (z' = z + s (h A) B), trained by the head engine. The policy samples through the adapter
 * as it is trained, so it has nothing to follow after an update. Runs are stored as kind 'gradient'.
 */
import { InvalidInputError } from '../../errors.js';
import { readAdapterFile, readCheckpoint, writeCheckpoint, type AdapterFile } from '../../train/head/format.js';
import type { HeadAdapterWeights } from '../../policy/head-adapter.js';
import type { GradientConfig } from './record.js';
import { GRADIENT_RECORD } from './record.js';
import { headEngine, type HeadTrainingEngine } from '../../train/head-engine.js';
import type { GradientAdapter } from './adapter.js';
import { resolveGradientConfig, validateGradientHandles, type GradientHandles, type GradientGrpoOptions } from './options.js';

export const headAdapter: GradientAdapter<'gradient', GradientHandles, GradientGrpoOptions, HeadTrainingEngine, AdapterFile, HeadAdapterWeights> = {
  kind: 'gradient',
  record: GRADIENT_RECORD,
  trains: 'head',
  create(options) {
    const config = resolveGradientConfig(options);
    return options.initialAdapter !== undefined ? { config, initial: readAdapterFile(options.initialAdapter, 'initialAdapter') } : { config };
  },
  validateHandles: validateGradientHandles,
  async open({ run, store, handles, last, initial }, train) {
    const trainer = train(headEngine(handles.policy, { adapter: adapterOf(handles, run.config) }));
    const checkpoint = last ? await store.getAdapter(run.id) : undefined;
    if (checkpoint) trainer.load(readCheckpoint(checkpoint).state);
    else if (initial) trainer.load({ a: initial.a, b: initial.b, m: zerosLike(initial), v: zerosLike(initial), updates: 0 });
    return { trainer };
  },
  checkpoint: async (trainer, step, model) => writeCheckpoint(await trainer.state(), trainer.engine.shape, step, model),
  file: (trainer) => trainer.engine.exportAdapter(),
};

/** The run's adapter shape and seed, checked against the policy's head. */
function adapterOf(handles: GradientHandles, config: GradientConfig) {
  const { head } = handles.policy;
  if (head!.hiddenSize !== config.adapter.hiddenSize || head!.vocabSize !== config.adapter.vocabSize) {
    throw new InvalidInputError('policy', `has hidden size ${head!.hiddenSize} and vocabulary ${head!.vocabSize}; the run's adapter was made for ${config.adapter.hiddenSize} and ${config.adapter.vocabSize}.`);
  }
  return { rank: config.adapter.rank, scale: config.adapter.scale, seed: config.adapter.seed };
}

function zerosLike(w: { a: Float32Array; b: Float32Array }) {
  return { a: new Float32Array(w.a.length), b: new Float32Array(w.b.length) };
}
