export * from './errors.js';
export * from './math/index.js';
export * from './route/index.js';
export type * from './policy/types.js';
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
export * from './train/index.js';
export * from './tasks/index.js';
export * from './tool/index.js';
export {
  recordingPolicy,
  replayPolicy,
  requestKey,
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
  type AdapterCheckpoint,
  type AdapterFile,
} from './grad/format.js';
export type { HeadAdapterWeights } from './policy/head-adapter.js';
