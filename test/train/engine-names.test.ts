/**
 * The training engines' names of earlier releases still name the same types, so code written
 * against them compiles (`npx tsc` checks these: expectTypeOf fails the typecheck, not the run).
 */
import { describe, expectTypeOf, it } from 'vitest';
import type {
  HeadAdapterEngine,
  HeadTrainingEngine,
  LoraAdapterEngine,
  LoraBasePolicy,
  LoraEngine,
  LoraGrpoOptions,
  LoraPolicy,
  LoraTrainingEngine,
  TrainablePolicy,
  TrainEngine,
  TrainingEngine,
} from '../../lib/grad.js';
import type { OnnxPolicy } from '../../lib/onnx.js';
import type { PromptInput } from '../../lib/core/policy.js';
import type { AdapterState } from '../../lib/train/head/state.js';

describe('the deprecated engine names', () => {
  it('are the new types', () => {
    expectTypeOf<TrainEngine<PromptInput, AdapterState>>().toEqualTypeOf<TrainingEngine<PromptInput, AdapterState>>();
    expectTypeOf<HeadAdapterEngine>().toEqualTypeOf<HeadTrainingEngine>();
    expectTypeOf<LoraAdapterEngine>().toEqualTypeOf<LoraTrainingEngine>();
    expectTypeOf<LoraPolicy>().toEqualTypeOf<TrainablePolicy>();
    expectTypeOf<LoraBasePolicy>().toEqualTypeOf<Pick<TrainablePolicy, 'modelGraph' | 'promptIds'>>();
    expectTypeOf<LoraEngine>().toEqualTypeOf<Exclude<NonNullable<LoraGrpoOptions['engine']>, 'auto'>>();
  });

  it('have both engines train the one policy interface, which the ONNX policy is', () => {
    expectTypeOf<HeadTrainingEngine>().toMatchTypeOf<TrainingEngine<PromptInput, AdapterState>>();
    expectTypeOf<LoraTrainingEngine>().toMatchTypeOf<TrainingEngine<PromptInput, unknown>>();
    expectTypeOf<OnnxPolicy>().toMatchTypeOf<TrainablePolicy>();
  });
});
