/**
 * Whether a LoRA step on a hub model fits in this tab, before Start: the library's estimate of the
 * step (estimateStepMemory, from the model's published shape and the form's settings) plus the
 * sampler, which holds the 4-bit weights the playground loads twice (its session and the files it
 * rebuilds sessions from). Past what a tab can hold the page says which smaller setting fits.
 */
import type { DecoderShape } from '../../lib/grad.js';
import { estimateStepMemory } from '../../lib/train/memory.js';

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
  /** The step's estimate plus the sampler's weights, in bytes. */
  bytes: number;
  fits: boolean;
  /** One sentence for the setup form. */
  text: string;
}

interface StepSettings {
  groupSize: number;
  batchSize: number;
  maxNewTokens: number;
}

const gb = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GB`;

function tabBytes(shape: DecoderShape, s: StepSettings): number {
  const step = estimateStepMemory(shape, { prompts: s.batchSize, groupSize: s.groupSize, promptTokens: PROMPT_TOKENS, completionTokens: s.maxNewTokens, dtype: 'q4' });
  return step.total + 2 * step.weights;
}

/** The estimate for a LoRA run on a hub model (undefined for other models and methods). */
export function stepMemoryNote(modelId: string, method: string, settings: StepSettings): StepMemoryNote | undefined {
  const shape = HUB_SHAPES[modelId];
  if (!shape || method !== 'lora') return undefined;
  const bytes = tabBytes(shape, settings);
  if (bytes <= TAB_BYTES) return { bytes, fits: true, text: `A LoRA step here needs about ${gb(bytes)} of this tab's memory (the 4-bit weights, the adapter and its optimizer, the activations).` };
  // The largest smaller settings that fit, one at a time, so the page can name each.
  const fitting = (key: keyof StepSettings) => {
    for (let v = settings[key] - 1; v >= 1; v--) if (tabBytes(shape, { ...settings, [key]: v }) <= TAB_BYTES) return v;
    return undefined;
  };
  const options = [
    settings.batchSize > 1 && fitting('batchSize') !== undefined ? `${fitting('batchSize')} prompts a step` : undefined,
    fitting('groupSize') !== undefined && fitting('groupSize')! >= 2 ? `groups of ${fitting('groupSize')}` : undefined,
    fitting('maxNewTokens') !== undefined ? `replies of at most ${fitting('maxNewTokens')} tokens` : undefined,
  ].filter((o): o is string => o !== undefined);
  const what = options.length > 0 ? `It fits with ${options.join(', or ')}.` : 'No setting of these fits; pick a smaller model.';
  return { bytes, fits: false, text: `A LoRA step here would need about ${gb(bytes)}, more than a tab can hold (${gb(TAB_BYTES)}). ${what}` };
}
