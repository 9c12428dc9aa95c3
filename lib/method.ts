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
export { payloadOf } from './store/records/step.js';
export { RUN_EXPORT_FORMAT, RUN_EXPORT_VERSION } from './store/run-export.js';
export type { RecordKind, RecordLookup, RunField } from './store/records/kind.js';
export { validateBundle } from './methods/records.js';
export { stepLibrary } from './methods/training-free/history.js';
export { runMethod, type RunMethod } from './methods/run-method.js';
export { validateDataset, validateDatasetItem } from './core/dataset.js';
export { stepStats, groupStats } from './run/stats.js';
export { epochStats } from './methods/training-free/stats.js';
export { itemResultGroup } from './export/run.js';
export { finishedEpochs } from './export/epoch.js';
export { RECORDING_FORMAT } from './policy/recorded.js';
export { completionId, parseCompletionId } from './session/records.js';

// The router's parts: the prompt of an arm, a query's class, the routing distribution.
export { armPrompt } from './methods/router/arm.js';
export { queryClassOf } from './methods/router/item.js';
export { routingProbabilities } from './methods/router/method.js';

// The experience library's operations, the critic's output schemas, and their defaults.
export { applyOperations, DEFAULT_MAX_EXPERIENCE_LENGTH, type ApplyOptions } from './experience/operations.js';
export { selectExemplar, applyExemplars, DEFAULT_MAX_EXEMPLARS, type ExemplarSelectOptions, type ApplyExemplarsOptions } from './experience/exemplars.js';
export { normalizeExperienceLibrary, validateLibrary, type NormalizeLibraryOptions } from './experience/normalize.js';
export { DEFAULT_EXPERIENCE_TOKEN_BUDGET, DEFAULT_LESSONS_TEMPLATE, DEFAULT_EXEMPLARS_TEMPLATE } from './experience/render.js';
export {
  criticLessonsSchema, criticOperationsSchema, type CriticLessonsSchemaOptions, type CriticOperationsSchemaOptions, type CriticSchemaOptions
} from './experience/critic-schema.js';

// Structured output: a response format compiled against a vocabulary into a per-token mask.
export { compileResponseFormat, ResponseGrammar, type GrammarOptions } from './constrain/format.js';
export { TokenMatcher } from './constrain/matcher.js';
export { tokenVocabulary, TokenVocabulary } from './constrain/vocabulary.js';
export { applyTokenMask, countAllowed, isAllowed, maskedLogSoftmax, maskedLogSumExp } from './constrain/mask.js';
export { byteLevelTokenBytes, sentencePieceTokenBytes } from './constrain/token-bytes.js';
export type { JsonSchema, ResponseFormat } from './core/policy.js';
