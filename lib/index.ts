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
export { trainingFreeGrpo, resumeTrainingFreeGrpo, type TrainingFreeRun, type TrainingFreeResult, type ResumeOptions } from './methods/training-free/method.js';
export { DEFAULTS as TRAINING_FREE_DEFAULTS, type TrainingFreeGrpoOptions, type TrainingFreeHandles } from './methods/training-free/options.js';
export type { TrainingFreeEvent, TrainingFreeEventType, EpochStats } from './methods/training-free/events.js';
export { defaultTemplates } from './methods/training-free/prompts.js';
export { learnFromGroups, type LearnFromGroupsOptions, type LearnResult, type LearnedGroup, type LearnWarning } from './methods/training-free/learn.js';
export { routerGrpo, resumeRouterGrpo, type RouterRun, type RouterResult } from './methods/router/method.js';
export { ROUTER_DEFAULTS, type RouterGrpoOptions, type RouterHandles } from './methods/router/options.js';
export type { RouterEvent, RouterEventType, RouterEpochStats } from './methods/router/events.js';
export { GrpoRouter, type GrpoRouterOptions, type GrpoRouterState, type RouterSample, type RouterUpdateStats } from './methods/router/router.js';
export type { RoutingContext } from './methods/router/query-class.js';
export type { Run } from './run/run.js';
export type { GroupSamplingOptions, LoopHandles } from './run/options.js';
export { evaluate, type EvaluateOptions, type EvaluateProgress, type JudgedSample } from './run/evaluate.js';
export type { EvalEvent, Progress } from './run/events.js';
export type { EvaluationOption, LoopEvaluationOptions } from './run/held-out.js';

// The experience library in a prompt.
export type * from './experience/types.js';
export { emptyLibrary } from './experience/types.js';
export { renderExperiences, withExperiences, promptWithLibrary, type LibraryPromptOptions, type RenderOptions, type RenderedExperiences } from './experience/render.js';

// Stores and runs.
export type * from './store/records/index.js';
export type * from './methods/training-free/record.js';
export type * from './methods/gradient/record.js';
export type * from './methods/router/record.js';
export type { Store, RunLock, RunStatusPatch, StepRange, DamagedRun } from './store/store.js';
export { MemoryStore } from './store/memory/store.js';
export { exportRun, type RunExport, type ImportOptions } from './store/run-export.js';
export { importRun } from './methods/records.js';
export { libraryAt } from './methods/training-free/history.js';

// Export for trainers elsewhere (TRL, verl).
export { toJsonl, jsonlLines, type ExportSource, type JsonlColumn, type JsonlFormat, type ToJsonlOptions } from './export/jsonl.js';
export type { ExportCompletion, ExportGroup, EpochExport, EpochHook } from './run/groups.js';
export { jsonlBlob, downloadJsonl } from './export/download.js';
export { runGroups } from './export/run.js';
export { exportEveryEpoch, type EpochExportOptions, type JsonlSink } from './export/epoch.js';
export { toPromptJsonl, renderPrompts, type PromptJsonlOptions, type PromptRenderer } from './export/prompts.js';
export { toPreferenceJsonl } from './export/preferences.js';

// Policies beside the backends: recordings for tests, a policy or a run in a worker.
export { recordingPolicy, replayPolicy, type PolicyRecording, type RecordedRequest, type RecordingPolicy, type ReplayOptions } from './policy/recorded.js';
export { createWorkerPolicy, type WorkerPolicyOptions } from './worker/client.js';
export { exposePolicy, type PolicyFactory, type WorkerScope } from './worker/expose.js';
export { exposeRuns, workerRun, type RunStarter, type RunWorker, type WorkerRun, type WorkerSideRun } from './worker/runs.js';

// Ask/tell: your own reward loop, and the tool an agent calls.
export {
  createSession, type AskInput, type AskResult, type ExternalCompletion, type Session, type SessionOptions, type TellInput, type TellResult
} from './session/session.js';
export { MemorySessionStore, type MemorySessionStoreOptions } from './store/memory/groups.js';
export { createTaskQueue, type QueueOptions, type QueueStats, type TaskQueue } from './session/queue.js';
export type * from './store/records/session.js';
export { createGrpoTool, toDatasetItem, type GrpoTool, type GrpoToolOptions, type Frame, type FrameWriter, type FrameSource, type ExperienceRecord, type ToolLoopOptions } from './tool/grpo-tool.js';
