/**
 * Whether a LoRA step on a hub model fits in this tab, before Start, and how: the library's plan
 * (planRunMemory: estimateStepMemory's `together` and `inTurns`, from the model's published shape
 * and the form's settings) under the tab's memory less the model's files, which the page keeps to
 * build the sampler's session again. The run gets the same budget with takeTurns 'auto', so it
 * holds the sampler and the step together when that fits and takes turns when only that does;
 * past both the page says which smaller setting fits, and in which mode.
 */
import type { DecoderShape, MemoryMode } from '../../lib/grad.js';
import { estimateStepMemory } from '../../lib/train/memory.js';
import { fitRunMemory, largestFitting, type PlanSettings } from '../../lib/train/memory-plan.js';

/** The hub models' config.json values (HuggingFaceTB/SmolLM2-135M-Instruct, -360M-Instruct, Qwen/Qwen2.5-0.5B-Instruct). */
const HUB_SHAPES: Record<string, DecoderShape> = {
  'smollm2-135m': { vocabSize: 49152, hiddenSize: 576, intermediateSize: 1536, numLayers: 30, numHeads: 9, numKvHeads: 3, headDim: 64, ropeTheta: 100000, rmsNormEps: 1e-5 },
  'smollm2-360m': { vocabSize: 49152, hiddenSize: 960, intermediateSize: 2560, numLayers: 32, numHeads: 15, numKvHeads: 5, headDim: 64, ropeTheta: 100000, rmsNormEps: 1e-5 },
  'qwen2.5-0.5b': { vocabSize: 151936, hiddenSize: 896, intermediateSize: 4864, numLayers: 24, numHeads: 14, numKvHeads: 2, headDim: 64, ropeTheta: 1000000, rmsNormEps: 1e-6 },
};

/**
 * What a tab may take: browsers give a 32-bit WebAssembly memory at most 4 GB (the sampler lives
 * there) and stop a renderer past a few GB more; 4 GB in all keeps a desktop tab alive.
 */
export const TAB_BYTES = 4 * 2 ** 30;

/** A chat prompt of the playground's tasks in a hub model's template: system turn, question, assistant header. */
const PROMPT_TOKENS = 96;

export interface StepMemoryNote {
  /** What the run needs in the mode it will run in (or together, when nothing fits), in bytes. */
  bytes: number;
  fits: boolean;
  /** Together, or taking turns (absent when nothing fits). */
  mode?: MemoryMode;
  /** One sentence for the setup form. */
  text: string;
}

interface StepSettings {
  groupSize: number;
  batchSize: number;
  maxNewTokens: number;
}

const gb = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GB`;

const planSettings = (s: StepSettings): PlanSettings => ({ prompts: s.batchSize, groupSize: s.groupSize, promptTokens: PROMPT_TOKENS, completionTokens: s.maxNewTokens, dtype: 'q4' });

/** The run's memoryBudget on this model: the tab's memory less the 4-bit weights' files the page keeps beside the run. */
function runBudget(shape: DecoderShape): number {
  return TAB_BYTES - estimateStepMemory(shape, { groupSize: 1, promptTokens: 1, completionTokens: 1, dtype: 'q4' }).weights;
}

/** The mode the run takes at these settings, or undefined when neither fits. */
function planned(shape: DecoderShape, s: StepSettings) {
  return fitRunMemory(shape, planSettings(s), runBudget(shape), 'auto');
}

/** What the setup hands a LoRA run on this model: its budget, and the library's choice of mode under it (none for other models). */
export function runMemoryOptions(modelId: string): { memoryBudget: number; takeTurns: 'auto' } | Record<string, never> {
  const shape = HUB_SHAPES[modelId];
  return shape ? { memoryBudget: runBudget(shape), takeTurns: 'auto' } : {};
}

/** The estimate for a LoRA run on a hub model (undefined for other models and methods). */
export function stepMemoryNote(modelId: string, method: string, settings: StepSettings): StepMemoryNote | undefined {
  const shape = HUB_SHAPES[modelId];
  if (!shape || method !== 'lora') return undefined;
  const files = TAB_BYTES - runBudget(shape);
  const plan = planned(shape, settings);
  if (plan?.mode === 'together') {
    const bytes = plan.together + files;
    return { bytes, fits: true, mode: 'together', text: `A LoRA step here needs about ${gb(bytes)} of this tab's memory (the 4-bit weights, the sampler beside the step, the adapter and its optimizer, the activations).` };
  }
  if (plan?.mode === 'turns') {
    const bytes = plan.inTurns + files;
    return {
      bytes,
      fits: true,
      mode: 'turns',
      text: `The sampler and the LoRA step together would need about ${gb(plan.together + files)}, more than a tab can hold (${gb(TAB_BYTES)}), so the run takes turns: the sampler is set aside while the step trains and built again after it (the same run, about 15% more CPU time), about ${gb(bytes)}.`,
    };
  }
  const together = estimateStepMemory(shape, { ...planSettings(settings), activationBudget: 0 });
  const bytes = together.together + files;
  // The largest smaller settings that fit, one at a time, so the page can name each (and whether it takes turns).
  const fitting = (key: keyof StepSettings, least: number, what: (v: number) => string) => {
    const v = largestFitting(settings[key], least, (value) => planned(shape, { ...settings, [key]: value }) !== undefined);
    if (v === undefined) return undefined;
    return planned(shape, { ...settings, [key]: v })!.mode === 'turns' ? `${what(v)} (taking turns)` : what(v);
  };
  const options = [
    fitting('batchSize', 1, (v) => `${v} prompt${v === 1 ? '' : 's'} a step`),
    fitting('groupSize', 2, (v) => `groups of ${v}`),
    fitting('maxNewTokens', 1, (v) => `replies of at most ${v} tokens`),
  ].filter((o): o is string => o !== undefined);
  const what = options.length > 0 ? `It fits with ${options.join(', or ')}.` : 'No setting of these fits; pick a smaller model.';
  return { bytes, fits: false, text: `A LoRA step here would need about ${gb(bytes)} with the sampler beside it and ${gb(together.inTurns + files)} taking turns, more than a tab can hold (${gb(TAB_BYTES)}). ${what}` };
}
