/**
 * The head adapter of the gradient method: a low-rank adapter on the LM head of a frozen ONNX
 * model (z' = z + s (h A) B), trained by the head engine. The policy samples through the adapter
 * as it is trained, so it has nothing to follow after an update. Runs are stored as kind 'gradient'.
 */
import { InvalidInputError } from '../../errors.js';
import { readAdapterFile, readCheckpoint, writeCheckpoint, type AdapterFile } from '../../train/head/format.js';
import type { HeadAdapterWeights } from '../../policy/head-adapter.js';
import type { GradientConfig, GradientRunRecord, GradientStepPayload } from './record.js';
import { headEngine, type HeadTrainingEngine } from '../../train/head-engine.js';
import type { NewRun, OpenContext } from '../../run/method.js';
import type { OpenAdapter } from './adapter.js';
import { runTrainer } from './update.js';
import { resolveGradientConfig, type GradientHandles, type GradientGrpoOptions } from './options.js';

/** A new head-adapter run: its stored config, and the trained adapter it starts from, if given. */
export function createHeadRun(options: GradientGrpoOptions): NewRun<GradientConfig, HeadAdapterWeights> {
  const config = resolveGradientConfig(options);
  return options.initialAdapter !== undefined ? { config, initial: readAdapterFile(options.initialAdapter, 'initialAdapter') } : { config };
}

/** The run's adapter on the policy's head: its last committed checkpoint, else the given adapter, else a fresh one from the run's seed. */
export async function openHeadAdapter({ run, store, handles, last, initial }: OpenContext<GradientRunRecord, GradientHandles, GradientStepPayload, HeadAdapterWeights>): Promise<OpenAdapter<GradientStepPayload, HeadTrainingEngine, AdapterFile>> {
  const trainer = runTrainer(headEngine(handles.policy, { adapter: adapterOf(handles, run.config) }), run.config, last);
  const checkpoint = last ? await store.getAdapter(run.id) : undefined;
  if (checkpoint) trainer.load(readCheckpoint(checkpoint).state);
  else if (initial) trainer.load({ a: initial.a, b: initial.b, m: zerosLike(initial), v: zerosLike(initial), updates: 0 });
  return {
    trainer,
    // The policy samples through the adapter as it is trained: nothing to follow.
    payload: async (training) => ({ kind: 'gradient', training }),
    checkpoint: async (step) => writeCheckpoint(await trainer.state(), trainer.engine.shape, step, handles.policy.info.model),
    file: async () => trainer.engine.exportAdapter(),
  };
}

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
