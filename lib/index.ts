/**
 * `webgrpo`: what a user of the loops calls. Run Training-Free GRPO or the router on a policy and
 * a task, keep the run in a store, evaluate it, export it, ask and tell from your own reward loop,
 * and catch the typed errors. The maths are `webgrpo/math`, building a method (the driver's hooks,
 * records, structured output) is `webgrpo/method`, the built-in tasks are `webgrpo/tasks`, and each
 * backend has its own subpath (`webgrpo/onnx`, `webgrpo/grad`, `webgrpo/idb`, ...), so importing
 * this entry loads no runtime.
 * test/pack/entries.test.ts keeps it within 60 runtime names.
 *
 * @module webgrpo
 */
export * from './errors.js';

// The data every part shares: the policy, a dataset item, a reward function.
export type * from './core/policy.js';
export type { DatasetItem } from './core/dataset.js';
export type { JsonValue } from './core/shape.js';
export type { RewardContext, RewardFunction } from './core/reward.js';

// The loops.
export {
  trainingFreeGrpo, resumeTrainingFreeGrpo, TRAINING_FREE_DEFAULTS, defaultTemplates, learnFromGroups,
  type TrainingFreeRun, type TrainingFreeResult, type ResumeOptions, type TrainingFreeGrpoOptions,
  type TrainingFreeHandles, type LoopHandles, type TrainingFreeEvent, type TrainingFreeEventType,
  type EpochStats, type Progress, type LearnFromGroupsOptions, type LearnResult, type LearnedGroup,
  type LearnWarning
} from './methods/training-free/index.js';
export {
  routerGrpo, resumeRouterGrpo, ROUTER_DEFAULTS, type RouterRun, type RouterResult, type RouterGrpoOptions,
  type RouterHandles, type RouterEvent, type RouterEventType, type RouterEpochStats
} from './methods/router/index.js';
export { GrpoRouter, type GrpoRouterOptions, type GrpoRouterState, type RouterSample, type RouterUpdateStats, type RoutingContext } from './methods/router/router.js';
export type { Run } from './run/run.js';
export type { GroupSamplingOptions } from './run/options.js';
export { evaluate, type EvaluateOptions, type EvaluateProgress, type JudgedSample } from './run/evaluate.js';
export type { EvalEvent } from './run/events.js';
export type { EvaluationOption, LoopEvaluationOptions } from './run/held-out.js';

// The experience library in a prompt.
export type * from './experience/types.js';
export { emptyLibrary, renderExperiences, withExperiences, promptWithLibrary, type LibraryPromptOptions, type RenderOptions, type RenderedExperiences } from './experience/index.js';

// Stores and runs.
export type * from './store/records/index.js';
export type * from './methods/training-free/record.js';
export type * from './methods/gradient/record.js';
export type * from './methods/router/record.js';
export type { Store, RunLock, RunStatusPatch, StepRange, DamagedRun } from './store/store.js';
export { MemoryStore, exportRun, type RunExport, type ImportOptions } from './store/index.js';
export { importRun } from './methods/records.js';
export { libraryAt } from './methods/training-free/history.js';

// Export for trainers elsewhere (TRL, verl).
export {
  toJsonl, jsonlLines, jsonlBlob, downloadJsonl, runGroups, exportEveryEpoch, toPromptJsonl, toPreferenceJsonl, renderPrompts,
  type ExportCompletion,
  type ExportGroup, type ExportSource, type JsonlColumn, type JsonlFormat, type ToJsonlOptions,
  type EpochExport, type EpochExportOptions, type EpochHook, type JsonlSink, type PromptJsonlOptions, type PromptRenderer
} from './export/index.js';

// Policies beside the backends: recordings for tests, a policy or a run in a worker.
export { recordingPolicy, replayPolicy, type PolicyRecording, type RecordedRequest, type RecordingPolicy, type ReplayOptions } from './policy/recorded.js';
export * from './worker/index.js';

// Ask/tell: your own reward loop, and the tool an agent calls.
export {
  createSession, MemorySessionStore, createTaskQueue, type AskInput, type AskResult, type ExternalCompletion,
  type Session, type SessionOptions, type TellInput, type TellResult, type MemorySessionStoreOptions,
  type QueueOptions, type QueueStats, type TaskQueue
} from './session/index.js';
export type * from './store/records/session.js';
export { createGrpoTool, toDatasetItem, type GrpoTool, type GrpoToolOptions, type Frame, type FrameWriter, type FrameSource, type ExperienceRecord, type ToolLoopOptions } from './tool/index.js';
