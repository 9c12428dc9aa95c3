/**
 * `webgrpo/tasks`: the built-in tasks (a seeded dataset and verifiable rewards each), the skill
 * tasks with their held-out splits, the reward helpers they are made of, and a JSONL dataset
 * parser. `getTask(name)` / `builtinTasks` list them; the loops take any `DatasetItem[]` and
 * `RewardFunction[]` instead.
 *
 * @module webgrpo/tasks
 */
export * from './tasks/index.js';
