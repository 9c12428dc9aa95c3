/**
 * `webgrpo/method`: building a method or a backend. A method is a run kind and a few hooks the one
 * driver calls (`Method`: `create` a run from its options, `open` a drive of it), started and
 * resumed through `startRun` / `resumeRun` and made known to validation, import, the CLI and the
 * playground with `registerMethod` (`builtinMethods` are the built-in ones); its step payload is
 * read back with `payloadOf`. Around that: the group sampler the built-in methods share, the experience
 * library's operations and critic schemas, the stored-run helpers and statistics, and structured
 * output (a response format compiled to a token mask) for a policy backend of your own.
 * docs/writing-a-method.md walks through one; test/run/best-of-g.ts is a whole one.
 *
 * @module webgrpo/method
 */

// The driver and its hooks.
export { startRun, resumeRun } from './run/driver.js';
export type { RunOf, CustomRunRecord } from './run/run.js';
export type { StepPlan } from './run/schedule.js';
export type {
  Method, MethodTypes, ResolvedMethodTypes, AnyMethod, NewRun, Drive, DriveMoment, HeldOutSampling, StartOptions, StepOutcome, PreparedItem, SampledGroup,
  ItemContext, OpenContext, Reporter, RunTally, EventFields
} from './run/method.js';
export { registerMethod, methodOf, methodKinds, builtinMethods, type RegisteredMethod } from './methods/registry.js';
export { generateGroups } from './policy/groups.js';

// Stored runs: a step's payload and library, a run's method, checks of what enters a store.
export { payloadOf, RUN_EXPORT_FORMAT, RUN_EXPORT_VERSION, type RecordKind, type RecordLookup, type RunField } from './store/index.js';
export { validateBundle } from './methods/records.js';
export { stepLibrary } from './methods/training-free/history.js';
export { runMethod, type RunMethod } from './methods/run-method.js';
export { validateDataset, validateDatasetItem } from './core/dataset.js';
export { stepStats, groupStats, epochStats } from './methods/training-free/index.js';
export { itemResultGroup, finishedEpochs } from './export/index.js';
export { RECORDING_FORMAT } from './policy/recorded.js';
export { completionId, parseCompletionId } from './session/index.js';

// The router's parts: the prompt of an arm, a query's class, the routing distribution.
export { armPrompt } from './methods/router/arm.js';
export { queryClassOf, routingProbabilities } from './methods/router/index.js';

// The experience library's operations, the critic's output schemas, and their defaults.
export {
  applyOperations, selectExemplar, applyExemplars, normalizeExperienceLibrary, validateLibrary,
  criticLessonsSchema, criticOperationsSchema, DEFAULT_MAX_EXPERIENCE_LENGTH, DEFAULT_MAX_EXEMPLARS,
  DEFAULT_EXPERIENCE_TOKEN_BUDGET, DEFAULT_LESSONS_TEMPLATE, DEFAULT_EXEMPLARS_TEMPLATE, type ApplyOptions,
  type ExemplarSelectOptions, type ApplyExemplarsOptions, type NormalizeLibraryOptions,
  type CriticLessonsSchemaOptions, type CriticOperationsSchemaOptions, type CriticSchemaOptions
} from './experience/index.js';

// Structured output: a response format compiled against a vocabulary into a per-token mask.
export {
  compileResponseFormat, ResponseGrammar, TokenMatcher, tokenVocabulary, TokenVocabulary,
  byteLevelTokenBytes, sentencePieceTokenBytes, applyTokenMask, isAllowed, countAllowed, maskedLogSoftmax,
  maskedLogSumExp, type GrammarOptions
} from './constrain/index.js';
export type { JsonSchema, ResponseFormat } from './core/policy.js';
