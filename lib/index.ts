export * from './errors.js';
export * from './math/index.js';
export * from './route/index.js';
export * from './methods/router/index.js';
export type * from './core/policy.js';
export type { DatasetItem, JsonValue } from './core/dataset.js';
export { generateGroups } from './policy/groups.js';
export {
  applyTokenMask,
  byteLevelTokenBytes,
  compileResponseFormat,
  countAllowed,
  isAllowed,
  maskedLogSoftmax,
  maskedLogSumExp,
  ResponseGrammar,
  sentencePieceTokenBytes,
  TokenMatcher,
  tokenVocabulary,
  TokenVocabulary,
  type GrammarOptions,
  type JsonSchema,
  type ResponseFormat,
} from './policy/constrain/index.js';
export * from './experience/index.js';
export * from './store/index.js';
export * from './methods/training-free/index.js';
export * from './tasks/index.js';
export * from './tool/index.js';
export {
  recordingPolicy,
  replayPolicy,
  RECORDING_FORMAT,
  type PolicyRecording,
  type RecordedRequest,
  type RecordingPolicy,
  type ReplayOptions,
} from './policy/recorded.js';
export * from './session/index.js';
export * from './export/index.js';
export * from './worker/index.js';
export {
  ADAPTER_FORMAT,
  ADAPTER_VERSION,
  readAdapterFile,
  readCheckpoint,
  writeAdapterFile,
  writeCheckpoint,
  isLoraCheckpoint,
  type AdapterCheckpoint,
  type HeadAdapterCheckpoint,
  type AdapterFile,
} from './grad/format.js';
export type { HeadAdapterWeights } from './policy/head-adapter.js';
export { startRun, resumeRun } from './run/driver.js';
export { newRunRecord, type Run, type RunOf, type CustomRunRecord } from './run/run.js';
export type { Method, StepOutcome, PreparedItem, SampledGroup, ItemContext, OpenContext, Reporter, RunTally, EventFields } from './run/method.js';
export { registerMethod, methodOf, methodKinds, type RegisteredMethod } from './methods/registry.js';
export { checkRunId, type GroupSamplingOptions } from './run/options.js';
export { evaluate, type EvaluateOptions, type EvaluateProgress, type JudgedSample } from './run/evaluate.js';
export type { EvalEvent } from './run/events.js';
export type { EvaluationOption, LoopEvaluationOptions } from './run/held-out.js';
