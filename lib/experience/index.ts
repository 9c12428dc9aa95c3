export * from './types.js';
export {
  applyOperations,
  DEFAULT_MAX_EXPERIENCE_LENGTH,
  type ApplyOptions,
} from './operations.js';
export {
  selectExemplar,
  applyExemplars,
  DEFAULT_MAX_EXEMPLARS,
  type ExemplarSelectOptions,
  type ApplyExemplarsOptions,
} from './exemplars.js';
export { normalizeExperienceLibrary, validateLibrary, type NormalizeLibraryOptions } from './normalize.js';
export {
  renderExperiences,
  withExperiences,
  promptWithLibrary,
  type LibraryPromptOptions,
  DEFAULT_EXPERIENCE_TOKEN_BUDGET,
  DEFAULT_LESSONS_TEMPLATE,
  DEFAULT_EXEMPLARS_TEMPLATE,
  type RenderOptions,
  type RenderedExperiences,
} from './render.js';
export {
  criticLessonsSchema,
  criticOperationsSchema,
  type CriticLessonsSchemaOptions,
  type CriticOperationsSchemaOptions,
  type CriticSchemaOptions,
} from './critic-schema.js';
