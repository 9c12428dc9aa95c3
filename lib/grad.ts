/**
 * `webgrpo/grad`: gradient GRPO in the browser. A low-rank adapter on the LM head of a frozen ONNX
 * model (z' = z + s (h A) B) is trained with the clipped GRPO loss and its exact gradient, on
 * onnxruntime's kernels on the policy's own backend (Node CPU, WASM or WebGPU).
 *
 *   const policy = await loadOnnxPolicy({ model, hiddenState: true });             // webgrpo/onnx
 *   const run = gradientGrpo({ policy, dataset: digits.dataset(), rewards: digits.rewards });
 *   for await (const event of run) if (event.type === 'train') console.log(event.metrics.loss);
 *
 * Full-depth LoRA (every attention and MLP projection of every layer) is the same method on the
 * other adapter (`loraGrpo(options)` is `gradientGrpo({ ...options, adapter: 'lora' })`):
 *
 *   const run = gradientGrpo({ adapter: 'lora', policy: await loadOnnxPolicy({ model }), dataset, rewards, lora: { r: 8 } });
 *
 * or, step by step in the shape of artifex's GRPOTrainer.train_step, over either engine (headEngine on the
 * head, loraEngine on every layer):
 *
 *   const trainer = new GrpoTrainer(headEngine(policy), { lr: 0.02 }, new GrpoConfig({ numGenerations: 8 }));
 *   const { loss, metrics } = await trainer.trainStep(groupRolloutBatch(groups), prompts);
 *
 * @module webgrpo/grad
 */
export { GrpoTrainer, type TrainerOptions, type TrainStepOptions, type TrainStepResult } from './train/trainer.js';
// One interface for what an update step trains, one engine per thing trained: the LM head's
// adapter (headEngine), full-depth LoRA (loraEngine); both train the policy described by TrainablePolicy.
export type { EngineBatch, EngineGroup, EngineStats, ForwardBackwardResult, ForwardOptions, PartSensitivities, Sensitivities, TrainingEngine } from './train/engine.js';
export type { TrainablePolicy } from './train/trainable-policy.js';
export { headEngine, type HeadTrainingEngine, type HeadEngineOptions } from './train/head-engine.js';
export type { TrainStepMetrics } from './train/metrics.js';
export {
  gradientGrpo, resumeGradientGrpo, loraGrpo, resumeLoraGrpo, type GradientRun, type GradientResult, type LoraRun,
  type LoraResult, type TrainedResult
} from './methods/gradient/method.js';
export { GRADIENT_DEFAULTS, type GradientLossOptions, type TrainingRunOptions } from './methods/gradient/training-options.js';
export type { GradientGrpoOptions, GradientHandles } from './methods/gradient/options.js';
export { LORA_GRPO_DEFAULTS, type LoraGrpoOptions, type LoraHandles } from './methods/gradient/lora.js';
export type { GradientEvent, GradientEventType, GradientEpochStats, LoraEvent, LoraEventType } from './methods/gradient/events.js';
export { groupRolloutBatch, rolloutSampling, type RolloutGroup, type RolloutCompletion } from './train/rollouts.js';
export type { RolloutSampling } from './train/objective.js';
export { attachAdapter, type AttachedAdapter } from './train/head/attach.js';
export type { OptimizerOptions } from './train/optimizer.js';
export type { AdapterInit, AdapterShape } from './train/head/adapter.js';
export type { AdapterState } from './train/head/state.js';
export type { HeadAdapterWeights } from './policy/head-adapter.js';
// The head adapter's file (`webgrpo.adapter`) and a store's checkpoint of either adapter.
export {
  readAdapterFile, writeAdapterFile, readCheckpoint, writeCheckpoint, type HeadAdapterCheckpoint, type AdapterFile
} from './train/head/format.js';
export type { AdapterCheckpoint } from './methods/gradient/adapter.js';

// Full-depth LoRA (every attention and MLP projection of every layer): the frozen decoder read
// from the ONNX graph (by its structure), a new adapter, its trainer on onnxruntime's graphs, PEFT
// folders, and the adapter merged into the ONNX model's weights (to export a model of its own).
export type { DecoderShape, DecoderWeights, LoraModule } from './weights/decoder.js';
export { readDecoderWeights, type ReadWeightsOptions } from './weights/read-onnx.js';
export { createLoraAdapter, type LoraAdapter, type LoraConfig, type LoraOptions } from './lora/adapter.js';
export { exportPeftAdapter, importPeftAdapter, peftBaseModel, PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE, type PeftBaseSource, type PeftExportOptions, type PeftFolder } from './lora/peft.js';
export { runPeftAdapter, type RunPeftAdapter } from './export/peft.js';
export { mergeLoraIntoOnnx } from './lora/onnx-merge.js';
export { loraEngine, loraModel, type LoraTrainingEngine, type LoraEngineOptions, type LoraEngineState, type LoraModel } from './train/lora-engine.js';
// What a LoRA step's memory goes to, before it runs, and the engine settings for a budget.
export { estimateStepMemory, planMemory, type StepMemoryEstimate, type StepMemorySettings } from './train/memory.js';
export type { MemoryMode, MemoryPlan } from './train/memory-plan.js';
export { readLoraAdapterFile, writeLoraAdapterFile, type LoraAdapterFile, type LoraCheckpoint } from './lora/format.js';

// Names of earlier releases, kept so code written against them still compiles.
import type { TrainingEngine } from './train/engine.js';
import type { HeadTrainingEngine } from './train/head-engine.js';
import type { LoraTrainingEngine } from './train/lora-engine.js';
import type { PromptInput } from './core/policy.js';
import type { TrainablePolicy } from './train/trainable-policy.js';
/** @deprecated use `TrainingEngine` */
export type TrainEngine<Prompt, State> = TrainingEngine<Prompt, State>;
/** @deprecated use `HeadTrainingEngine` */
export type HeadAdapterEngine = HeadTrainingEngine;
/** @deprecated use `LoraTrainingEngine` */
export type LoraAdapterEngine<Prompt = PromptInput> = LoraTrainingEngine<Prompt>;
/** @deprecated use `TrainablePolicy` */
export type LoraPolicy = TrainablePolicy;
/** @deprecated use `Pick<TrainablePolicy, 'modelGraph' | 'promptIds'>` (what `loraModel` reads) */
export type LoraBasePolicy = Pick<TrainablePolicy, 'modelGraph' | 'promptIds'>;
/** @deprecated the LoRA `engine` option's one value: write `'onnxruntime'` (or leave it out) */
export type LoraEngine = 'onnxruntime';
