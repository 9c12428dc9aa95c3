/**
 * A stored LoRA run's adapter as PEFT's folder (`exportPeftAdapter`), its base model named from
 * the run's own model (`peftBaseModel`) unless one is given: what `webgrpo export --peft` writes.
 * The head adapter is no LoRA (a low-rank update of the LM head's output, which PEFT has no type
 * for) and is refused by name, as is a run with no committed step (no adapter is stored yet).
 */
import { InvalidInputError, UnsupportedError } from '../errors.js';
import { readLoraAdapterFile } from '../lora/format.js';
import { exportPeftAdapter, peftBaseModel, type PeftBaseSource, type PeftFolder } from '../lora/peft.js';
import type { RunBundle } from '../store/records/index.js';
import { isRunBundle } from './run.js';

export interface RunPeftAdapter {
  folder: PeftFolder;
  /** `base_model_name_or_path` as written. */
  baseModel: string;
  /** Where the run's model came from ('given' when `baseModel` was passed). */
  source: PeftBaseSource | 'given';
  /** What a user must know about that base before loading the adapter on it. */
  note?: string;
}

/**
 * A stored LoRA run's adapter as the files of a PEFT folder, with the base model named from the
 * run (or `baseModel`); throws for a non-LoRA run or one with no committed step.
 */
export function runPeftAdapter(bundle: RunBundle, options: { baseModel?: string } = {}): RunPeftAdapter {
  if (!isRunBundle(bundle)) throw new InvalidInputError('run', 'expected a run bundle { run, items, steps, pending } (exportRun, store.readBundle).');
  const { run } = bundle;
  if (run.kind !== 'lora') {
    throw new UnsupportedError(`run ${run.id} is a ${run.kind} run; only LoRA runs (--method lora, loraGrpo) train an adapter PEFT loads${run.kind === 'gradient' ? ' (the head adapter has no PEFT type)' : ''}.`);
  }
  if (!bundle.adapter) throw new InvalidInputError('run', `run ${run.id} has no committed step, so no adapter is stored yet; train it further first.`);
  if (options.baseModel !== undefined && (typeof options.baseModel !== 'string' || options.baseModel.trim() === '')) {
    throw new InvalidInputError('baseModel', 'must name the base model (a hub id or a path).');
  }
  const adapter = readLoraAdapterFile((bundle.adapter as { adapter?: unknown }).adapter, 'adapter.adapter');
  const base = options.baseModel !== undefined ? { baseModel: options.baseModel, source: 'given' as const } : peftBaseModel(run.config.policy.model);
  return { folder: exportPeftAdapter(adapter, { baseModel: base.baseModel }), ...base };
}
