export { trainingFreeGrpo, resumeTrainingFreeGrpo, type TrainingFreeRun, type TrainingFreeResult, type ResumeOptions } from './loop.js';
export { DEFAULTS as TRAINING_FREE_DEFAULTS, type TrainingFreeGrpoOptions, type LoopHandles, type RewardFunction, type RewardContext } from './options.js';
export type { TrainingFreeEvent, TrainingFreeEventType, EpochStats, Progress } from '../../run/events.js';
export { defaultTemplates } from './prompts.js';
export { epochStats, stepStats, groupStats } from '../../run/stats.js';
export { extractJson, parseLessons, parseOperations, type Parsed } from './parse.js';
export { learnFromGroups, type LearnFromGroupsOptions, type LearnResult, type LearnedGroup, type LearnWarning } from './learn.js';
