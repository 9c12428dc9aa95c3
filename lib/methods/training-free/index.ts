export { trainingFreeGrpo, resumeTrainingFreeGrpo, type TrainingFreeRun, type TrainingFreeResult, type ResumeOptions } from './method.js';
export { DEFAULTS as TRAINING_FREE_DEFAULTS, type TrainingFreeGrpoOptions, type TrainingFreeHandles } from './options.js';
export type { LoopHandles } from '../../run/options.js';
export type { TrainingFreeEvent, TrainingFreeEventType, EpochStats } from './events.js';
export type { Progress } from '../../run/events.js';
export { defaultTemplates } from './prompts.js';
export { epochStats } from './stats.js';
export { stepStats, groupStats } from '../../run/stats.js';
export { learnFromGroups, type LearnFromGroupsOptions, type LearnResult, type LearnedGroup, type LearnWarning } from './learn.js';
